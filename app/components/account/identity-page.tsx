import { useEffect, useRef, useState } from "react";
import type { IdentityKeysView } from "../../.server/screens/account/views";
import { useBrand } from "../ui/brand";
import { Field } from "../ui/field";
import { fill } from "../ui/fill";
import { slots, useT } from "../ui/i18n";
import { ErrorMessage, Warning } from "../ui/messages";
import { mutedText, primaryButton, secondaryButton, smallButton } from "../ui/styles";
import { AccountShell } from "./account-shell";
import { keyFileText, makeBrowserKey } from "./browser-key";
import { ConfirmIdentity } from "./confirm-identity";
import { SignedInFormFields } from "./form-account";

type FormState = { errors: Record<string, string>; values: Record<string, string> };

type Props = { view: IdentityKeysView; errorsFor: (form: string) => FormState };

type State = NonNullable<IdentityKeysView["state"]>;

/**
 * /account/identity, "Keep a key of your own" (docs/decisions/0050): why a key of one's own matters, in plain words;
 * what the DID document says now; then the form that puts a did:key above this server's. The form works without
 * JavaScript (the person pastes a did:key made with a tool of their own); with JavaScript, "Make a key in this browser"
 * makes the pair with Web Crypto, downloads the private key as a file and fills in the public one. The private key
 * never leaves the browser.
 */
export function IdentityPage({ view, errorsFor }: Props) {
  const { t } = useT();
  const state = view.state;
  const changeable = state?.control === "sole" || state?.control === "shared";
  return (
    <AccountShell base={view} current="/account" title={t("account:titles.identity")} intro={t("account:identity.intro")}>
      <section aria-labelledby="why-heading" className="flex flex-col gap-2">
        <h2 id="why-heading" className="text-lg font-semibold">
          {t("account:identity.whyTitle")}
        </h2>
        <p>{t("account:identity.why")}</p>
        <p>{t("account:identity.private")}</p>
      </section>
      {state ? <RecordNow view={view} state={state} errors={errorsFor("remove")} /> : <Warning>{t("account:identity.unavailable", { directory: view.directoryUrl })}</Warning>}
      {state && changeable ? <AddKey view={view} state={state} formState={errorsFor("add")} confirmErrors={errorsFor("confirm").errors} /> : null}
    </AccountShell>
  );
}

/** What the directory's record says, as a list a person can read: handle, server, signing key, keys in order. */
function RecordNow({ view, state, errors }: { view: IdentityKeysView; state: State; errors: FormState }) {
  const { t } = useT();
  const removable = !view.confirm && (state.control === "sole" || state.control === "shared");
  const removeError = errors.errors.form ?? errors.errors.didKey;
  return (
    <section aria-labelledby="record-heading" className="flex flex-col gap-3 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <h2 id="record-heading" className="text-lg font-semibold">
        {t("account:identity.recordTitle")}
      </h2>
      <p className={`text-sm ${mutedText}`}>{fill(t("account:identity.source", slots("directory")), { directory: <span className="break-all">{view.directoryUrl}</span> })}</p>
      <p>{t(`account:identity.control.${state.control}`)}</p>
      {state.control === "ended" ? null : (
        <dl className="grid gap-x-4 gap-y-2 sm:grid-cols-[12rem_1fr]">
          <dt className="font-semibold">{t("account:overview.accountId")}</dt>
          <dd className="font-mono text-sm break-all">{view.account.did}</dd>
          <dt className="font-semibold">{t("account:identity.handle")}</dt>
          <dd className="break-all">{state.handles.length ? state.handles.map((handle) => `@${handle}`).join(", ") : t("account:identity.none")}</dd>
          <dt className="font-semibold">{t("account:identity.server")}</dt>
          <dd className="break-all">{state.pdsEndpoint ?? t("account:identity.none")}</dd>
          <dt className="font-semibold">{t("account:identity.signingKey")}</dt>
          <dd>{state.signingKeyHere ? t("account:identity.signingKeyHere") : t("account:identity.signingKeyElsewhere")}</dd>
          <dt className="font-semibold">{t("account:identity.rotationKeys")}</dt>
          <dd>
            <ol className="flex list-decimal flex-col gap-2 ps-5">
              {state.rotationKeys.map(({ didKey, server }) => (
                <li key={didKey}>
                  <span className="font-medium">{server ? t("account:identity.serverKey") : t("account:identity.otherKey")}</span>
                  <span className="block font-mono text-sm break-all">{didKey}</span>
                  {removable && !server ? <RemoveKey view={view} didKey={didKey} /> : null}
                </li>
              ))}
            </ol>
          </dd>
        </dl>
      )}
      {removeError ? <ErrorMessage id="remove-error">{removeError}</ErrorMessage> : null}
    </section>
  );
}

function RemoveKey({ view, didKey }: { view: IdentityKeysView; didKey: string }) {
  const { t } = useT();
  return (
    <form method="post" className="mt-1">
      <SignedInFormFields csrfToken={view.csrfToken} />
      <input type="hidden" name="intent" value="remove" />
      <input type="hidden" name="didKey" value={didKey} />
      <button type="submit" className={`${secondaryButton} ${smallButton}`} aria-label={t("account:identity.removeLabel", { key: didKey })}>
        {t("account:identity.remove")}
      </button>
    </form>
  );
}

/** "Add a key of your own": "Confirm it's you" first when the last proof is old; then the did:key, made here or pasted. */
function AddKey({ view, state, formState, confirmErrors }: { view: IdentityKeysView; state: State; formState: FormState; confirmErrors: Record<string, string> }) {
  const { t } = useT();
  const full = state.rotationKeys.length >= view.maxRotationKeys;
  return (
    <section aria-labelledby="add-heading" className="flex flex-col gap-4">
      <h2 id="add-heading" className="text-lg font-semibold">
        {t("account:identity.addTitle")}
      </h2>
      {view.confirm ? (
        <ConfirmIdentity confirm={view.confirm} csrfToken={view.csrfToken} handle={view.account.handle} reason={t("account:identity.confirmReason")} errors={confirmErrors} level={3} />
      ) : full ? (
        <p>{t("account:identity.full", { count: view.maxRotationKeys })}</p>
      ) : (
        <AddKeyForm view={view} formState={formState} />
      )}
    </section>
  );
}

function AddKeyForm({ view, formState }: { view: IdentityKeysView; formState: FormState }) {
  const { t } = useT();
  const { errors, values } = formState;
  const input = useRef<HTMLInputElement>(null);
  const formError = errors.form;
  return (
    <form method="post" noValidate className="flex max-w-xl flex-col gap-4 rounded-2xl border border-slate-200 bg-white p-5 dark:border-slate-800 dark:bg-slate-900">
      <SignedInFormFields csrfToken={view.csrfToken} />
      <input type="hidden" name="intent" value="add" />
      <MakeKeyInBrowser view={view} fillIn={(didKey) => {
        if (input.current) input.current.value = didKey;
      }} />
      <Field
        id="didKey"
        name="didKey"
        label={t("account:identity.didKey")}
        hint={t("account:identity.didKeyHint")}
        autoComplete="off"
        required
        maxLength={200}
        defaultValue={values.didKey ?? ""}
        error={errors.didKey}
        inputRef={input}
        invalid={Boolean(formError)}
        describedBy={formError ? "add-error" : undefined}
        autoFocus={Boolean(errors.didKey || formError)}
      />
      {formError ? <ErrorMessage id="add-error">{formError}</ErrorMessage> : null}
      <button type="submit" className={`${primaryButton} self-start`}>
        {t("account:identity.submit")}
      </button>
    </form>
  );
}

/**
 * "Make a key in this browser": shown only once the page's script runs (a button that does nothing without it would
 * mislead). It makes the pair, downloads the private key as a file, and fills in the public did:key.
 */
function MakeKeyInBrowser({ view, fillIn }: { view: IdentityKeysView; fillIn: (didKey: string) => void }) {
  const { t } = useT();
  const brand = useBrand();
  const [available, setAvailable] = useState(false);
  const [status, setStatus] = useState<{ kind: "idle" } | { kind: "busy" } | { kind: "made"; file: string } | { kind: "failed" }>({ kind: "idle" });

  useEffect(() => setAvailable(typeof globalThis.crypto?.subtle?.generateKey === "function"), []);
  if (!available) return null;

  async function make() {
    setStatus({ kind: "busy" });
    try {
      const key = await makeBrowserKey();
      const { did, handle } = view.account;
      const note = t("account:identity.fileNote", { did, handle, service: brand.serviceName });
      const file = `rotation-key-${handle}.json`;
      const link = document.createElement("a");
      const url = URL.createObjectURL(new Blob([keyFileText(key, { did, handle, note })], { type: "application/json" }));
      link.href = url;
      link.download = file;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      fillIn(key.didKey);
      setStatus({ kind: "made", file });
    } catch {
      setStatus({ kind: "failed" });
    }
  }

  return (
    <div className="flex flex-col gap-2">
      <button type="button" className={`${secondaryButton} self-start`} onClick={make} disabled={status.kind === "busy"}>
        {status.kind === "busy" ? t("account:identity.making") : t("account:identity.make")}
      </button>
      <div role="status">
        {status.kind === "made" ? <p className="text-slate-800 dark:text-slate-100">{t("account:identity.made", { file: status.file })}</p> : null}
        {status.kind === "failed" ? <p className="text-red-800 dark:text-red-300">{t("account:identity.makeFailed")}</p> : null}
      </div>
    </div>
  );
}
