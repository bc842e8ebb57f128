import { createElement, Suspense, type ReactElement } from "react";
import { renderToString } from "react-dom/server";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { streamPage, type StreamPageOptions } from "./stream-page.ts";

/**
 * The render's error path (issue 16: 500s with a normal page, nothing logged). Time is faked (timers only: React
 * schedules its own work with setImmediate), so "a render that takes longer than 5 seconds" is a clock moved
 * forward, not a wait.
 */

const RESPONSE_TIMEOUT_MS = 30_000;

/** A part of the page that waits (like Remix's streamed loader data) until the test settles it. */
function gate() {
  let state: { done: false } | { done: true; error?: Error } = { done: false };
  let release!: () => void;
  const waiting = new Promise<void>((resolve) => (release = resolve));
  const Part = () => {
    if (!state.done) throw waiting;
    if (state.error) throw state.error;
    return createElement("p", null, "streamed part");
  };
  return {
    element: createElement("main", null, createElement("h1", null, "Sign in"), createElement(Suspense, { fallback: createElement("span", null, "…") }, createElement(Part))),
    open: () => {
      state = { done: true };
      release();
    },
    fail: (error: Error) => {
      state = { done: true, error };
      release();
    },
  };
}

function options(overrides: Partial<StreamPageOptions> = {}) {
  const reports: { message: string; error: unknown }[] = [];
  return {
    reports,
    options: {
      status: 200,
      headers: new Headers(),
      signal: new AbortController().signal,
      deadlineMs: RESPONSE_TIMEOUT_MS,
      report: (message: string, error: unknown) => reports.push({ message, error }),
      ...overrides,
    } satisfies StreamPageOptions,
  };
}

const Broken = (): ReactElement => {
  throw new Error("broken component");
};

describe("streamPage", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a render still waiting after 5 seconds (a burst's queue) answers 200 with the whole page, and reports nothing", async () => {
    const page = gate();
    const { reports, options: settings } = options();
    const answer = streamPage(page.element, settings);
    // The old entry aborted every render 5 s after it started.
    vi.advanceTimersByTime(10_000);
    page.open();
    const response = await answer;
    expect(response.status).toBe(200);
    const html = await response.text();
    expect(html).toContain("streamed part");
    expect(html).not.toContain("<template");
    expect(reports).toEqual([]);
  });

  it("an error inside a boundary, before the shell is ready, answers 500 and is reported once", async () => {
    const { reports, options: settings } = options();
    const element = createElement("main", null, createElement(Suspense, { fallback: null }, createElement(Broken)));
    const response = await streamPage(element, settings);
    expect(response.status).toBe(500);
    expect(reports.map((report) => (report.error as Error).message)).toEqual(["broken component"]);
    expect(reports[0]!.message).toBe("Unexpected error while rendering a page");
  });

  it("a part that fails after the shell answers 500 and is reported once", async () => {
    const page = gate();
    const { reports, options: settings } = options();
    const answer = streamPage(page.element, settings);
    page.fail(new Error("late failure"));
    expect((await answer).status).toBe(500);
    expect(reports.map((report) => (report.error as Error).message)).toEqual(["late failure"]);
  });

  it("a shell error rejects without a report of its own (Remix's handleError reports it and renders the error boundary)", async () => {
    const { reports, options: settings } = options();
    await expect(streamPage(createElement(Broken), settings)).rejects.toThrow("broken component");
    expect(reports).toEqual([]);
  });

  it("a client that went away stops the render; nothing is reported for it", async () => {
    const page = gate();
    const client = new AbortController();
    const { reports, options: settings } = options({ signal: client.signal });
    const answer = streamPage(page.element, settings);
    client.abort();
    await expect(answer).rejects.toThrow("The client went away");
    expect(reports).toEqual([]);
  });

  it("a client that goes away once the shell is rendered stops the render too, without a report", async () => {
    const page = gate();
    const client = new AbortController();
    const { reports, options: settings } = options({ signal: client.signal });
    const answer = streamPage(page.element, settings);
    // React renders the shell on its next turn (setImmediate, not faked).
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    client.abort();
    await expect(answer).rejects.toThrow("The client went away");
    page.open();
    expect(reports).toEqual([]);
  });

  it("at the response timeout (the entry has answered 503) the render is abandoned without a report, and stops its timer once done", async () => {
    const page = gate();
    const { reports, options: settings } = options();
    const answer = streamPage(page.element, settings);
    vi.advanceTimersByTime(RESPONSE_TIMEOUT_MS - 1);
    page.open();
    vi.advanceTimersByTime(1);
    // Remix logs the rejection (handleError): a page slower than the response timeout is worth knowing about.
    await expect(answer).rejects.toThrow("not rendered within the response timeout");
    expect(reports).toEqual([]);
    // A finished render leaves no timer behind.
    const done = gate();
    const finished = streamPage(done.element, options().options);
    done.open();
    await finished;
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe("streamPage's bytes", () => {
  /** Japanese paragraphs after `pad` ASCII characters: the 2,048-byte chunk boundaries fall inside characters. */
  const japanesePage = (pad: number) =>
    createElement(
      "main",
      { "aria-label": "アカウントの移行" },
      createElement("p", null, "x".repeat(pad)),
      ...Array.from({ length: 8 }, (_, i) => createElement("p", { key: i, title: "次の四つの手順" }, `アカウントを別のサーバーへ移すには、次の四つの手順を踏みます。${"日本語".repeat(i * 7)}`)),
    );

  it("are the bytes renderToString gives, whatever the layout: never a NUL byte of React's chunk padding", async () => {
    // React 18.3.1 (react/react#31134) padded most of these layouts with 0x00 at a chunk's end.
    for (let pad = 0; pad < 60; pad++) {
      const element = japanesePage(pad);
      const response = await streamPage(element, options().options);
      const bytes = Buffer.from(await response.arrayBuffer());
      expect({ pad, nulAt: bytes.indexOf(0) }).toEqual({ pad, nulAt: -1 });
      expect(bytes.toString("utf8")).toBe(renderToString(element));
    }
  });
});
