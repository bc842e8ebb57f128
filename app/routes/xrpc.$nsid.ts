import type { ActionFunctionArgs, LoaderFunctionArgs } from "@remix-run/node";
import { handleXrpc } from "../.server/xrpc/router";

/** /xrpc/<nsid>: every data-server method goes through the XRPC router. */
export function loader({ params, request }: LoaderFunctionArgs) {
  return handleXrpc(params.nsid ?? "", request);
}

export function action({ params, request }: ActionFunctionArgs) {
  return handleXrpc(params.nsid ?? "", request);
}
