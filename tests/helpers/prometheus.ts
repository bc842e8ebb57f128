/**
 * Reads the Prometheus text exposition format (what GET /metrics answers):
 * one sample per line, `name{label="value",…} number`, comments skipped.
 */

export type Sample = { name: string; labels: Record<string, string>; value: number };

export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[label[1]!] = label[2]!.replace(/\\(.)/g, (_all, char: string) => (char === "n" ? "\n" : char));
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

export async function scrape(port: number): Promise<Sample[]> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (response.status !== 200) throw new Error(`GET /metrics answered ${response.status}`);
  return parsePrometheus(await response.text());
}

/** The value of one series (0 when absent). */
export function valueOf(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  const sample = samples.find((candidate) => candidate.name === name && Object.entries(labels).every(([key, value]) => candidate.labels[key] === value));
  return sample?.value ?? 0;
}

/** Every series of the named metrics, as `name{labels}` keys, to compare label sets. */
export function seriesOf(samples: readonly Sample[], prefix: string): Set<string> {
  return new Set(
    samples
      .filter((sample) => sample.name.startsWith(prefix))
      .map((sample) => `${sample.name}{${Object.entries(sample.labels).map(([key, value]) => `${key}=${JSON.stringify(value)}`).join(",")}}`),
  );
}

/**
 * Scrapes until `settled` holds (or 2 s pass): a screen's answer is counted
 * when Node reports it finished, which can be a moment after the client has
 * read it.
 */
export async function scrapeUntil(port: number, settled: (samples: Sample[]) => boolean): Promise<Sample[]> {
  let samples = await scrape(port);
  for (let i = 0; i < 40 && !settled(samples); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    samples = await scrape(port);
  }
  return samples;
}
