import { splitCallTarget, type ActivityApp, type ActivityLine } from "../../activity/activity-lines.ts";
import type { Services } from "../../services.ts";
import type { ActivityLineView, HistoryViews } from "./views.ts";

/**
 * The history of `app` (an OAuth client or an app password) as its page shows it, each line made by `lineView`.
 * Reading it is when the account's days past the kept ones go (activity/app-activity.ts). Counting off: nothing.
 */
export async function historyViews(services: Services, accountDid: string, app: ActivityApp, lineView: (line: ActivityLine) => ActivityLineView = activityLineView): Promise<HistoryViews> {
  if (!services.activity.enabled) return { activityEnabled: false, activity: [], days: [] };
  await services.activity.dropExpired(accountDid);
  const history = await services.activity.history(accountDid, app);
  return {
    activityEnabled: true,
    activity: history.lines.map(lineView),
    days: history.days.map(({ day, lines }) => ({ day: new Date(day).toISOString(), lines: lines.map(lineView) })),
  };
}

/** A line as it reads, without a permission: a call's method and service apart. */
export function activityLineView(line: ActivityLine): ActivityLineView {
  const call = line.kind === "call" ? splitCallTarget(line.target) : undefined;
  return {
    kind: line.kind,
    target: call ? call.lxm : line.target,
    ...(call ? { service: call.service } : {}),
    count: line.count,
    lastAt: new Date(line.lastAt).toISOString(),
    takenBack: false,
  };
}
