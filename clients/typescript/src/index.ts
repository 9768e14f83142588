// The typed client of the College Matching API: openapi-fetch over the types
// openapi-typescript generates from api/openapi.yaml (src/openapi.ts, `npm run
// generate`). A path, body or answer field the document does not have fails
// the type check, so code written against this package follows the contract.
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { components, operations, paths } from "./openapi.js";

export type { components, operations, paths };

/** The document's schemas by name, e.g. `Schemas["RecommendationItem"]`. */
export type Schemas = components["schemas"];

/** An openapi-fetch client of the API: `GET`, `POST`, ... by path, typed by the document. */
export type MatchingClient = Client<paths>;

/** A bearer token, or a function giving the current one (called for every request). */
export type TokenSource = string | (() => string | Promise<string>);

export interface MatchingClientOptions extends Omit<ClientOptions, "baseUrl"> {
  /** Where the API is, e.g. `https://api.example.edu` or `http://localhost:8080`. */
  baseUrl: string;
  /**
   * The JWT sent as `Authorization: Bearer <token>`: a student's (its `sub`
   * is the student id) or a service token. A function is called for every
   * request, so a refreshed token is picked up. Without one, no
   * `Authorization` header is added (every operation then answers 401).
   */
  token?: TokenSource;
}

/**
 * A client of the API at `baseUrl`, acting as the token's student.
 *
 * Each method returns openapi-fetch's `{ data, error, response }`; pass the
 * call to {@link unwrap} to get the answer or an {@link APIError} thrown.
 */
export function createMatchingClient(options: MatchingClientOptions): MatchingClient {
  const { token, baseUrl, ...rest } = options;
  const client = createClient<paths>({ ...rest, baseUrl: baseUrl.replace(/\/+$/, "") });
  if (token !== undefined) {
    client.use({
      async onRequest({ request }) {
        const value = typeof token === "function" ? await token() : token;
        request.headers.set("Authorization", `Bearer ${value}`);
        return request;
      },
    });
  }
  return client;
}

/** An error answer of the API: `{"error":{"code","message","details"}}` with its status and headers. */
export class APIError extends Error {
  constructor(
    /** The HTTP status, e.g. 404. */
    readonly status: number,
    /** The error code, e.g. `INVALID_STUDENT_ID`; `HTTP_<status>` when the body is not the API's error body. */
    readonly code: string,
    message: string,
    /** The error's context, e.g. `fields` for `INVALID_REQUEST`; `{}` when there is none. */
    readonly details: Record<string, unknown>,
    /** The answer's `X-Request-ID`, to quote when reporting a problem. */
    readonly requestId: string | null,
    /** Seconds to wait before retrying (`Retry-After` of a 429 or 503), else null. */
    readonly retryAfter: number | null,
  ) {
    super(message);
    this.name = "APIError";
  }
}

type Result<T> = { data?: T; error?: unknown; response: Response };

/** Awaits a client call and returns its answer, or throws an {@link APIError}. */
export async function unwrap<T>(pending: Promise<Result<T>>): Promise<T> {
  const { data, error, response } = await pending;
  if (response.ok && data !== undefined) {
    return data;
  }
  const body = (typeof error === "object" && error !== null ? error : {}) as Partial<Schemas["Error"]>;
  const retry = Number(response.headers.get("Retry-After"));
  throw new APIError(
    response.status,
    body.error?.code ?? `HTTP_${response.status}`,
    body.error?.message ?? (response.statusText || `HTTP ${response.status}`),
    body.error?.details ?? {},
    response.headers.get("X-Request-ID"),
    Number.isFinite(retry) && retry > 0 ? retry : null,
  );
}
