import { ZodError } from "zod";
import { AtriumError } from "./atrium-error.ts";

/** Where an unexpected error goes: the services' reporter (logs with the request id, counts database errors). */
export type UnexpectedErrorSink = (message: string, thrown: unknown) => void;

/** Without a reporter at hand (a unit test, a script): standard error. */
const toStandardError: UnexpectedErrorSink = (message, thrown) => console.error(`${message}:`, thrown);

/**
 * The one function that describes anything thrown while answering a request:
 * an AtriumError as it is; a zod validation failure (bad input) as 400
 * `invalid_request` naming the field; anything else as a 500 whose details go
 * to `report` (the log) only, never to the client.
 */
export function describeError(thrown: unknown, report: UnexpectedErrorSink = toStandardError): AtriumError {
  if (thrown instanceof AtriumError) return thrown;
  if (thrown instanceof ZodError) return new AtriumError("invalid_request", zodMessage(thrown), { xrpcName: "InvalidRequest" });
  report("Unexpected error while handling a request", thrown);
  return new AtriumError("server_error", "The server could not handle this request", {
    status: 500,
    xrpcName: "InternalServerError",
    title: "Something went wrong",
    titleKey: "errors:server.title",
    messageKey: "errors:server.message",
  });
}

/** "field: what is wrong with it", from the first issue zod found. */
export function zodMessage(error: ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "Invalid request";
  const field = issue.path.join(".");
  return `${field ? `${field}: ` : ""}${issue.message}`;
}
