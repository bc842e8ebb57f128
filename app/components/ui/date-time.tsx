const formatter = new Intl.DateTimeFormat("en-GB", { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" });

/** A date from the server, shown the same on the server and in the browser (UTC), so hydration agrees. */
export function DateTime({ iso }: { iso: string }) {
  return <time dateTime={iso}>{formatter.format(new Date(iso))} UTC</time>;
}
