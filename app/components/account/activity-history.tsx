import type { ActivityLineView } from "../../.server/screens/account/views";
import { DateTime } from "../ui/date-time";
import { useT } from "../ui/i18n";
import { mutedText, summaryStyle } from "../ui/styles";

type Day = { day: string; lines: ActivityLineView[] };

/**
 * What an app did in the kept days (docs/decisions/0053), for an OAuth app's page and an app password's: one card per
 * kind and target with its count, last time and (an OAuth app's) the permission it used, then the same day by day,
 * folded. `control`: what a card offers beside (an OAuth app's Take this back).
 */
export function ActivityHistory(props: { enabled: boolean; lines: ActivityLineView[]; days: Day[]; control?: (line: ActivityLineView, describedBy: string) => React.ReactNode }) {
  const { t } = useT();
  return (
    <section aria-labelledby="app-activity" className="flex flex-col gap-3">
      <h2 id="app-activity" className="text-xl font-semibold">
        {t("account:app.activity.title")}
      </h2>
      {!props.enabled ? (
        <p className={mutedText}>{t("account:app.activity.off")}</p>
      ) : props.lines.length === 0 ? (
        <p className={mutedText}>{t("account:app.activity.none")}</p>
      ) : (
        <>
          <ul className="flex flex-col gap-3" data-testid="activity">
            {props.lines.map((line, index) => (
              <li key={lineKey(line)}>
                <ActivityCard line={line} id={`activity-${index}`} control={props.control} />
              </li>
            ))}
          </ul>
          <ByDay days={props.days} />
        </>
      )}
    </section>
  );
}

function lineKey(line: ActivityLineView): string {
  return `${line.kind} ${line.target} ${line.service ?? ""}`;
}

function ActivityCard({ line, id, control }: { line: ActivityLineView; id: string; control?: (line: ActivityLineView, describedBy: string) => React.ReactNode }) {
  const { t } = useT();
  return (
    <article aria-labelledby={id} className="flex flex-col gap-2 rounded-2xl border border-slate-200 bg-white p-4 dark:border-slate-800 dark:bg-slate-900">
      <p id={id} className="font-semibold">
        <LineWhat line={line} />
      </p>
      <dl className="grid grid-cols-[auto_1fr] gap-x-3 gap-y-0.5 text-sm">
        <dt className={mutedText}>{t("account:app.activity.last")}</dt>
        <dd>
          <DateTime iso={line.lastAt} />
        </dd>
        {line.permission ? (
          <>
            <dt className={mutedText}>{t("account:app.activity.permission")}</dt>
            <dd>{line.permission}</dd>
          </>
        ) : null}
      </dl>
      {control?.(line, id)}
    </article>
  );
}

function ByDay({ days }: { days: Day[] }) {
  const { t } = useT();
  return (
    <details className="text-sm">
      <summary className={summaryStyle}>{t("account:app.activity.byDay")}</summary>
      <ul className="mt-2 flex flex-col gap-2">
        {days.map(({ day, lines }) => (
          <li key={day}>
            <h3 className="font-semibold">
              <time dateTime={day}>{day.slice(0, 10)}</time>
            </h3>
            <ul className="list-disc pl-5">
              {lines.map((line) => (
                <li key={lineKey(line)}>
                  <LineWhat line={line} />
                </li>
              ))}
            </ul>
          </li>
        ))}
      </ul>
    </details>
  );
}

/** "Created 3 records · app.bsky.feed.post": the act and its count in words, the technical name beside. */
function LineWhat({ line }: { line: ActivityLineView }) {
  const { t } = useT();
  return (
    <>
      {t(`account:app.activity.kinds.${line.kind}`, { count: line.count })}
      {" · "}
      <span className="font-mono text-xs break-all">{line.target === "" ? t("account:app.activity.other") : line.target}</span>
      {line.service ? <span className="font-mono text-xs break-all"> → {line.service}</span> : null}
    </>
  );
}

/** A page's own address, for apps to link to. */
export function PageAddress({ address, hint }: { address: string; hint: string }) {
  const { t } = useT();
  return (
    <section aria-labelledby="app-address" className="flex flex-col gap-1 text-sm">
      <h2 id="app-address" className="font-semibold">
        {t("account:app.address")}
      </h2>
      <p className={mutedText}>{hint}</p>
      <code className="break-all">{address}</code>
    </section>
  );
}
