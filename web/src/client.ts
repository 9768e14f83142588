// The API client of the demo and docs pages: the package in
// ../clients/typescript (@collegematch/matching-client), openapi-fetch over
// the types generated from api/openapi.yaml. A path, body or answer field the
// document does not have fails the type check (`make web-check`), so the page
// cannot drift from it.
import { createMatchingClient, type MatchingClient } from "@collegematch/matching-client";

export { APIError, unwrap, type Schemas } from "@collegematch/matching-client";
export type Client = MatchingClient;

/** What `matchctl demo` serves at /session: a fresh student and its development token. */
export interface Session {
  student_id: string;
  token: string;
  expires_at: string;
}

/** The path of matchctl demo's same-origin proxy to the public API. */
export const apiBase = "/api";

/** A client of the API, through the proxy, acting as the session's student. */
export function apiClient(session: Session, origin = location.origin): Client {
  return createMatchingClient({ baseUrl: origin + apiBase, token: session.token });
}

/** Loads the demo session; a new student when fresh is true. */
export async function loadSession(fresh = false): Promise<Session> {
  const resp = await fetch("/session", { method: fresh ? "POST" : "GET" });
  if (!resp.ok) {
    throw new Error(`the demo server answered ${resp.status} for /session`);
  }
  return (await resp.json()) as Session;
}
