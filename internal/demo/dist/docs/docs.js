// src/client.ts
var apiBase = "/api";
async function loadSession(fresh = false) {
  const resp = await fetch("/session", { method: fresh ? "POST" : "GET" });
  if (!resp.ok) {
    throw new Error(`the demo server answered ${resp.status} for /session`);
  }
  return await resp.json();
}

// src/docs.ts
async function main() {
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
    validatorUrl: null,
    // never ask a validator on the internet
    defaultModelsExpandDepth: 0,
    requestInterceptor(req) {
      const u = new URL(req.url, location.href);
      if (u.origin !== location.origin) {
        req.url = location.origin + apiBase + u.pathname + u.search;
        if (session && !req.headers["Authorization"]) {
          req.headers["Authorization"] = `Bearer ${session.token}`;
        }
      }
      return req;
    }
  });
}
main().catch((err) => {
  document.body.append(String(err));
});
