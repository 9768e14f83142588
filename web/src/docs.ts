// The API docs page: Swagger UI (bundled from the swagger-ui-dist package,
// loaded from this server) rendering /docs/openapi.yaml, the document the
// API is tested against. "Try it out" goes through matchctl demo's proxy
// as the demo student.
import { apiBase, loadSession } from "./client";

interface SwaggerRequest {
  url: string;
  headers: Record<string, string>;
}

interface SwaggerUIOptions {
  url: string;
  dom_id: string;
  deepLinking: boolean;
  validatorUrl: null;
  defaultModelsExpandDepth: number;
  requestInterceptor: (req: SwaggerRequest) => SwaggerRequest;
}

declare global {
  interface Window {
    SwaggerUIBundle?: (options: SwaggerUIOptions) => unknown;
  }
}

async function main(): Promise<void> {
  const render = window.SwaggerUIBundle;
  if (!render) {
    throw new Error("swagger-ui-bundle.js did not load");
  }
  const session = await loadSession().catch(() => null);
  const who = document.getElementById("student-id");
  if (who) {
    who.textContent = session?.student_id ?? "(no session)";
  }
  render({
    url: "/docs/openapi.yaml",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null, // never ask a validator on the internet
    defaultModelsExpandDepth: 0,
    requestInterceptor(req) {
      const u = new URL(req.url, location.href);
      if (u.origin !== location.origin) {
        // A call to one of the document's servers: send it through the proxy.
        req.url = location.origin + apiBase + u.pathname + u.search;
        if (session && !req.headers["Authorization"]) {
          req.headers["Authorization"] = `Bearer ${session.token}`;
        }
      }
      return req;
    },
  });
}

main().catch((err: unknown) => {
  document.body.append(String(err));
});
