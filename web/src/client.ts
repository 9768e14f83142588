// The API client of the demo and docs pages: openapi-fetch over the types
// openapi-typescript generates from api/openapi.yaml (src/api/openapi.d.ts,
// `make clients`). A path, body or answer field the document does not have
// fails the type check (`make web-check`), so the page cannot drift from it.
import createClient from "openapi-fetch";
import type { components, paths } from "./api/openapi";

export type Schemas = components["schemas"];
export type Client = ReturnType<typeof createClient<paths>>;

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
  const client = createClient<paths>({ baseUrl: origin + apiBase });
  client.use({
    onRequest({ request }) {
      request.headers.set("Authorization", `Bearer ${session.token}`);
      return request;
    },
  });
  return client;
}

/** An error answer of the API: its code, message, status, request id and Retry-After. */
export class APIError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
    readonly retryAfter: number | null,
  ) {
    super(message);
    this.name = "APIError";
  }
}

type Result<T> = { data?: T; error?: unknown; response: Response };

/** Awaits a client call and returns its answer, or throws an APIError. */
export async function unwrap<T>(pending: Promise<Result<T>>): Promise<T> {
  const { data, error, response } = await pending;
  if (response.ok && data !== undefined) {
    return data;
  }
  const body = (error ?? {}) as Partial<Schemas["Error"]>;
  const retry = Number(response.headers.get("Retry-After"));
  throw new APIError(
    response.status,
    body.error?.code ?? `HTTP_${response.status}`,
    body.error?.message ?? response.statusText,
    response.headers.get("X-Request-ID"),
    Number.isFinite(retry) && retry > 0 ? retry : null,
  );
}

/** Loads the demo session; a new student when fresh is true. */
export async function loadSession(fresh = false): Promise<Session> {
  const resp = await fetch("/session", { method: fresh ? "POST" : "GET" });
  if (!resp.ok) {
    throw new Error(`the demo server answered ${resp.status} for /session`);
  }
  return (await resp.json()) as Session;
}
