import type { ReactNode } from "react";
import { BrandFooter, BrandHeader } from "../ui/brand";
import { Card } from "../ui/card";
import { ActionNotice } from "../ui/messages";

type Props = {
  title: string;
  intro?: ReactNode;
  notice?: string;
  children: ReactNode;
};

/**
 * The frame of the account screens shown before an account is chosen (sign-in, the account chooser, password
 * recovery): the operator's brand, one card with the page's heading, its introduction and notice, then the page.
 */
export function SignedOutPage({ title, intro, notice, children }: Props) {
  return (
    <div className="mx-auto flex min-h-screen w-full max-w-md flex-col gap-4 px-3 py-6 sm:justify-center sm:px-6">
      <BrandHeader className="px-2" />
      <main id="main">
        <Card className="flex flex-col gap-5">
          <div className="flex flex-col gap-1">
            <h1 className="text-2xl font-semibold">{title}</h1>
            {intro ? (
              <p className="text-slate-700 dark:text-slate-200">{intro}</p>
            ) : null}
          </div>
          {notice ? <ActionNotice>{notice}</ActionNotice> : null}
          {children}
        </Card>
      </main>
      <BrandFooter />
    </div>
  );
}
