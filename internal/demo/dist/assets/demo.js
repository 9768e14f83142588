// ../clients/typescript/node_modules/openapi-fetch/dist/index.mjs
var PATH_PARAM_RE = /\{[^{}]+\}/g;
var supportsRequestInitExt = () => {
  return typeof process === "object" && Number.parseInt(process?.versions?.node?.substring(0, 2)) >= 18 && process.versions.undici;
};
function randomID() {
  return Math.random().toString(36).slice(2, 11);
}
function createClient(clientOptions) {
  let {
    baseUrl = "",
    Request: CustomRequest = globalThis.Request,
    fetch: baseFetch = globalThis.fetch,
    querySerializer: globalQuerySerializer,
    bodySerializer: globalBodySerializer,
    pathSerializer: globalPathSerializer,
    headers: baseHeaders,
    requestInitExt = void 0,
    ...baseOptions
  } = { ...clientOptions };
  requestInitExt = supportsRequestInitExt() ? requestInitExt : void 0;
  baseUrl = removeTrailingSlash(baseUrl);
  const globalMiddlewares = [];
  async function coreFetch(schemaPath, fetchOptions) {
    const {
      baseUrl: localBaseUrl,
      fetch: fetch2 = baseFetch,
      Request = CustomRequest,
      headers,
      params = {},
      parseAs = "json",
      querySerializer: requestQuerySerializer,
      bodySerializer = globalBodySerializer ?? defaultBodySerializer,
      pathSerializer: requestPathSerializer,
      body,
      middleware: requestMiddlewares = [],
      ...init
    } = fetchOptions || {};
    let finalBaseUrl = baseUrl;
    if (localBaseUrl) {
      finalBaseUrl = removeTrailingSlash(localBaseUrl) ?? baseUrl;
    }
    let querySerializer = typeof globalQuerySerializer === "function" ? globalQuerySerializer : createQuerySerializer(globalQuerySerializer);
    if (requestQuerySerializer) {
      querySerializer = typeof requestQuerySerializer === "function" ? requestQuerySerializer : createQuerySerializer({
        ...typeof globalQuerySerializer === "object" ? globalQuerySerializer : {},
        ...requestQuerySerializer
      });
    }
    const pathSerializer = requestPathSerializer || globalPathSerializer || defaultPathSerializer;
    const serializedBody = body === void 0 ? void 0 : bodySerializer(
      body,
      // Note: we declare mergeHeaders() both here and below because it’s a bit of a chicken-or-egg situation:
      // bodySerializer() needs all headers so we aren’t dropping ones set by the user, however,
      // the result of this ALSO sets the lowest-priority content-type header. So we re-merge below,
      // setting the content-type at the very beginning to be overwritten.
      // Lastly, based on the way headers work, it’s not a simple “present-or-not” check becauase null intentionally un-sets headers.
      mergeHeaders(baseHeaders, headers, params.header)
    );
    const finalHeaders = mergeHeaders(
      // with no body, we should not to set Content-Type
      serializedBody === void 0 || // if serialized body is FormData; browser will correctly set Content-Type & boundary expression
      serializedBody instanceof FormData ? {} : {
        "Content-Type": "application/json"
      },
      baseHeaders,
      headers,
      params.header
    );
    const finalMiddlewares = [...globalMiddlewares, ...requestMiddlewares];
    const requestInit = {
      redirect: "follow",
      ...baseOptions,
      ...init,
      body: serializedBody,
      headers: finalHeaders
    };
    let id;
    let options;
    let request = new Request(
      createFinalURL(schemaPath, { baseUrl: finalBaseUrl, params, querySerializer, pathSerializer }),
      requestInit
    );
    let response;
    for (const key in init) {
      if (!(key in request)) {
        request[key] = init[key];
      }
    }
    if (finalMiddlewares.length) {
      id = randomID();
      options = Object.freeze({
        baseUrl: finalBaseUrl,
        fetch: fetch2,
        parseAs,
        querySerializer,
        bodySerializer,
        pathSerializer
      });
      for (const m of finalMiddlewares) {
        if (m && typeof m === "object" && typeof m.onRequest === "function") {
          const result = await m.onRequest({
            request,
            schemaPath,
            params,
            options,
            id
          });
          if (result) {
            if (result instanceof Request) {
              request = result;
            } else if (result instanceof Response) {
              response = result;
              break;
            } else {
              throw new Error("onRequest: must return new Request() or Response() when modifying the request");
            }
          }
        }
      }
    }
    if (!response) {
      try {
        response = await fetch2(request, requestInitExt);
      } catch (error2) {
        let errorAfterMiddleware = error2;
        if (finalMiddlewares.length) {
          for (let i = finalMiddlewares.length - 1; i >= 0; i--) {
            const m = finalMiddlewares[i];
            if (m && typeof m === "object" && typeof m.onError === "function") {
              const result = await m.onError({
                request,
                error: errorAfterMiddleware,
                schemaPath,
                params,
                options,
                id
              });
              if (result) {
                if (result instanceof Response) {
                  errorAfterMiddleware = void 0;
                  response = result;
                  break;
                }
                if (result instanceof Error) {
                  errorAfterMiddleware = result;
                  continue;
                }
                throw new Error("onError: must return new Response() or instance of Error");
              }
            }
          }
        }
        if (errorAfterMiddleware) {
          throw errorAfterMiddleware;
        }
      }
      if (finalMiddlewares.length) {
        for (let i = finalMiddlewares.length - 1; i >= 0; i--) {
          const m = finalMiddlewares[i];
          if (m && typeof m === "object" && typeof m.onResponse === "function") {
            const result = await m.onResponse({
              request,
              response,
              schemaPath,
              params,
              options,
              id
            });
            if (result) {
              if (!(result instanceof Response)) {
                throw new Error("onResponse: must return new Response() when modifying the response");
              }
              response = result;
            }
          }
        }
      }
    }
    const contentLength = response.headers.get("Content-Length");
    if (response.status === 204 || request.method === "HEAD" || contentLength === "0" && !response.headers.get("Transfer-Encoding")?.includes("chunked")) {
      return response.ok ? { data: void 0, response } : { error: void 0, response };
    }
    if (response.ok) {
      const getResponseData = async () => {
        if (parseAs === "stream") {
          return response.body;
        }
        if (parseAs === "json" && !contentLength) {
          const raw = await response.text();
          return raw ? JSON.parse(raw) : void 0;
        }
        return await response[parseAs]();
      };
      return { data: await getResponseData(), response };
    }
    let error = await response.text();
    try {
      error = JSON.parse(error);
    } catch {
    }
    return { error, response };
  }
  return {
    request(method, url, init) {
      return coreFetch(url, { ...init, method: method.toUpperCase() });
    },
    /** Call a GET endpoint */
    GET(url, init) {
      return coreFetch(url, { ...init, method: "GET" });
    },
    /** Call a PUT endpoint */
    PUT(url, init) {
      return coreFetch(url, { ...init, method: "PUT" });
    },
    /** Call a POST endpoint */
    POST(url, init) {
      return coreFetch(url, { ...init, method: "POST" });
    },
    /** Call a DELETE endpoint */
    DELETE(url, init) {
      return coreFetch(url, { ...init, method: "DELETE" });
    },
    /** Call a OPTIONS endpoint */
    OPTIONS(url, init) {
      return coreFetch(url, { ...init, method: "OPTIONS" });
    },
    /** Call a HEAD endpoint */
    HEAD(url, init) {
      return coreFetch(url, { ...init, method: "HEAD" });
    },
    /** Call a PATCH endpoint */
    PATCH(url, init) {
      return coreFetch(url, { ...init, method: "PATCH" });
    },
    /** Call a TRACE endpoint */
    TRACE(url, init) {
      return coreFetch(url, { ...init, method: "TRACE" });
    },
    /** Register middleware */
    use(...middleware) {
      for (const m of middleware) {
        if (!m) {
          continue;
        }
        if (typeof m !== "object" || !("onRequest" in m || "onResponse" in m || "onError" in m)) {
          throw new Error("Middleware must be an object with one of `onRequest()`, `onResponse() or `onError()`");
        }
        globalMiddlewares.push(m);
      }
    },
    /** Unregister middleware */
    eject(...middleware) {
      for (const m of middleware) {
        const i = globalMiddlewares.indexOf(m);
        if (i !== -1) {
          globalMiddlewares.splice(i, 1);
        }
      }
    }
  };
}
function serializePrimitiveParam(name, value, options) {
  if (value === void 0 || value === null) {
    return "";
  }
  if (typeof value === "object") {
    throw new Error(
      "Deeply-nested arrays/objects aren’t supported. Provide your own `querySerializer()` to handle these."
    );
  }
  return `${name}=${options?.allowReserved === true ? value : encodeURIComponent(value)}`;
}
function serializeObjectParam(name, value, options) {
  if (!value || typeof value !== "object") {
    return "";
  }
  const values = [];
  const joiner = {
    simple: ",",
    label: ".",
    matrix: ";"
  }[options.style] || "&";
  if (options.style !== "deepObject" && options.explode === false) {
    for (const k in value) {
      values.push(k, options.allowReserved === true ? value[k] : encodeURIComponent(value[k]));
    }
    const final2 = values.join(",");
    switch (options.style) {
      case "form": {
        return `${name}=${final2}`;
      }
      case "label": {
        return `.${final2}`;
      }
      case "matrix": {
        return `;${name}=${final2}`;
      }
      default: {
        return final2;
      }
    }
  }
  for (const k in value) {
    const finalName = options.style === "deepObject" ? `${name}[${k}]` : k;
    values.push(serializePrimitiveParam(finalName, value[k], options));
  }
  const final = values.join(joiner);
  return options.style === "label" || options.style === "matrix" ? `${joiner}${final}` : final;
}
function serializeArrayParam(name, value, options) {
  if (!Array.isArray(value)) {
    return "";
  }
  if (options.explode === false) {
    const joiner2 = { form: ",", spaceDelimited: "%20", pipeDelimited: "|" }[options.style] || ",";
    const final = (options.allowReserved === true ? value : value.map((v) => encodeURIComponent(v))).join(joiner2);
    switch (options.style) {
      case "simple": {
        return final;
      }
      case "label": {
        return `.${final}`;
      }
      case "matrix": {
        return `;${name}=${final}`;
      }
      // case "spaceDelimited":
      // case "pipeDelimited":
      default: {
        return `${name}=${final}`;
      }
    }
  }
  const joiner = { simple: ",", label: ".", matrix: ";" }[options.style] || "&";
  const values = [];
  for (const v of value) {
    if (options.style === "simple" || options.style === "label") {
      values.push(options.allowReserved === true ? v : encodeURIComponent(v));
    } else {
      values.push(serializePrimitiveParam(name, v, options));
    }
  }
  return options.style === "label" || options.style === "matrix" ? `${joiner}${values.join(joiner)}` : values.join(joiner);
}
function createQuerySerializer(options) {
  return function querySerializer(queryParams) {
    const search = [];
    if (queryParams && typeof queryParams === "object") {
      for (const name in queryParams) {
        const value = queryParams[name];
        if (value === void 0 || value === null) {
          continue;
        }
        if (Array.isArray(value)) {
          if (value.length === 0) {
            continue;
          }
          search.push(
            serializeArrayParam(name, value, {
              style: "form",
              explode: true,
              ...options?.array,
              allowReserved: options?.allowReserved || false
            })
          );
          continue;
        }
        if (typeof value === "object") {
          search.push(
            serializeObjectParam(name, value, {
              style: "deepObject",
              explode: true,
              ...options?.object,
              allowReserved: options?.allowReserved || false
            })
          );
          continue;
        }
        search.push(serializePrimitiveParam(name, value, options));
      }
    }
    return search.join("&");
  };
}
function defaultPathSerializer(pathname, pathParams) {
  let nextURL = pathname;
  for (const match of pathname.match(PATH_PARAM_RE) ?? []) {
    let name = match.substring(1, match.length - 1);
    let explode = false;
    let style = "simple";
    if (name.endsWith("*")) {
      explode = true;
      name = name.substring(0, name.length - 1);
    }
    if (name.startsWith(".")) {
      style = "label";
      name = name.substring(1);
    } else if (name.startsWith(";")) {
      style = "matrix";
      name = name.substring(1);
    }
    if (!pathParams || pathParams[name] === void 0 || pathParams[name] === null) {
      continue;
    }
    const value = pathParams[name];
    if (Array.isArray(value)) {
      nextURL = nextURL.replace(match, serializeArrayParam(name, value, { style, explode }));
      continue;
    }
    if (typeof value === "object") {
      nextURL = nextURL.replace(match, serializeObjectParam(name, value, { style, explode }));
      continue;
    }
    if (style === "matrix") {
      nextURL = nextURL.replace(match, `;${serializePrimitiveParam(name, value)}`);
      continue;
    }
    nextURL = nextURL.replace(match, style === "label" ? `.${encodeURIComponent(value)}` : encodeURIComponent(value));
  }
  return nextURL;
}
function defaultBodySerializer(body, headers) {
  if (body instanceof FormData) {
    return body;
  }
  if (headers) {
    const contentType = headers.get instanceof Function ? headers.get("Content-Type") ?? headers.get("content-type") : headers["Content-Type"] ?? headers["content-type"];
    if (contentType === "application/x-www-form-urlencoded") {
      return new URLSearchParams(body).toString();
    }
  }
  return JSON.stringify(body);
}
function createFinalURL(pathname, options) {
  let finalURL = `${options.baseUrl}${pathname}`;
  if (options.params?.path) {
    finalURL = options.pathSerializer(finalURL, options.params.path);
  }
  let search = options.querySerializer(options.params.query ?? {});
  if (search.startsWith("?")) {
    search = search.substring(1);
  }
  if (search) {
    finalURL += `?${search}`;
  }
  return finalURL;
}
function mergeHeaders(...allHeaders) {
  const finalHeaders = new Headers();
  for (const h of allHeaders) {
    if (!h || typeof h !== "object") {
      continue;
    }
    const iterator = h instanceof Headers ? h.entries() : Object.entries(h);
    for (const [k, v] of iterator) {
      if (v === null) {
        finalHeaders.delete(k);
      } else if (Array.isArray(v)) {
        for (const v2 of v) {
          finalHeaders.append(k, v2);
        }
      } else if (v !== void 0) {
        finalHeaders.set(k, v);
      }
    }
  }
  return finalHeaders;
}
function removeTrailingSlash(url) {
  if (url.endsWith("/")) {
    return url.substring(0, url.length - 1);
  }
  return url;
}

// ../clients/typescript/src/index.ts
function createMatchingClient(options) {
  const { token, baseUrl, ...rest } = options;
  const client = createClient({ ...rest, baseUrl: baseUrl.replace(/\/+$/, "") });
  if (token !== void 0) {
    client.use({
      async onRequest({ request }) {
        const value = typeof token === "function" ? await token() : token;
        request.headers.set("Authorization", `Bearer ${value}`);
        return request;
      }
    });
  }
  return client;
}
var APIError = class extends Error {
  constructor(status, code, message, details, requestId, retryAfter) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
    this.requestId = requestId;
    this.retryAfter = retryAfter;
    this.name = "APIError";
  }
  status;
  code;
  details;
  requestId;
  retryAfter;
};
async function unwrap(pending) {
  const { data, error, response } = await pending;
  if (response.ok && data !== void 0) {
    return data;
  }
  const body = typeof error === "object" && error !== null ? error : {};
  const retry = Number(response.headers.get("Retry-After"));
  throw new APIError(
    response.status,
    body.error?.code ?? `HTTP_${response.status}`,
    body.error?.message ?? (response.statusText || `HTTP ${response.status}`),
    body.error?.details ?? {},
    response.headers.get("X-Request-ID"),
    Number.isFinite(retry) && retry > 0 ? retry : null
  );
}

// src/client.ts
var apiBase = "/api";
function apiClient(session, origin = location.origin) {
  return createMatchingClient({ baseUrl: origin + apiBase, token: session.token });
}
async function loadSession(fresh = false) {
  const resp = await fetch("/session", { method: fresh ? "POST" : "GET" });
  if (!resp.ok) {
    throw new Error(`the demo server answered ${resp.status} for /session`);
  }
  return await resp.json();
}

// src/demo.ts
var phaseText = {
  discovery: "Learning your preferences...",
  refinement: "Refining matches...",
  stable: "Personalized for you"
};
var weightLabels = [
  ["cost_weight", "Cost", "importance of a low net price"],
  ["aid_weight", "Aid", "importance of financial aid"],
  ["distance_weight", "Distance", "importance of being near home"],
  ["outcomes_weight", "Outcomes", "importance of graduation and earnings"],
  ["campus_weight", "Campus", "importance of size and setting fit"],
  ["program_weight", "Programs", "importance of offering your majors"],
  ["academic_selectivity", "Selectivity", "preferred selectivity (higher: more selective)"],
  ["size_preference", "Size", "preferred size (0 very small, 1 very large)"]
];
var reasonText = {
  too_expensive: "Too expensive",
  wrong_location: "Wrong location",
  not_my_major: "Not my major",
  too_selective: "Too selective",
  perfect_match: "Perfect match"
};
var deckPage = 10;
var topSize = 5;
var state;
function $(id) {
  const node = document.getElementById(id);
  if (!node) {
    throw new Error(`#${id} is missing from the page`);
  }
  return node;
}
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c !== null && c !== void 0 && c !== false) {
      node.append(c);
    }
  }
  return node;
}
function showSection(id) {
  for (const s of ["onboarding", "categories", "swiping"]) {
    $(s).hidden = s !== id;
  }
}
function showError(err) {
  const box = $("error");
  if (err === null) {
    box.hidden = true;
    box.textContent = "";
    return;
  }
  let text = err instanceof Error ? err.message : String(err);
  if (err instanceof APIError) {
    text = `${err.code} (${err.status}): ${err.message}`;
    if (err.requestId) {
      text += ` [request ${err.requestId}]`;
    }
  }
  box.textContent = text;
  box.hidden = false;
}
function percent(x) {
  return `${Math.round(x * 100)}%`;
}
function money(x) {
  return `$${x.toLocaleString("en-US")}`;
}
async function begin(fresh) {
  const session = await loadSession(fresh);
  if (fresh) {
    window.clearTimeout(state.refreshTimer);
  }
  state = {
    session,
    client: apiClient(session),
    profileComplete: false,
    deck: [],
    swipeId: "",
    shownAt: 0,
    busy: false,
    startWeights: null,
    lastWeights: null,
    lastTop: [],
    refreshTimer: void 0
  };
  $("student-id").textContent = session.student_id;
  $("weights").replaceChildren();
  $("top").replaceChildren();
  $("deck").replaceChildren();
  hideFeedback();
  setProgress(0, "discovery", 0, null);
  showError(null);
  showSection("onboarding");
  document.body.dataset.ready = "true";
}
function optionalNumber(v) {
  const s = String(v ?? "").trim();
  return s === "" ? null : Number(s);
}
async function onboard(ev) {
  ev.preventDefault();
  const form = ev.currentTarget;
  const f = new FormData(form);
  const sat = optionalNumber(f.get("sat"));
  const majors = String(f.get("majors") ?? "").split(",").map((m) => m.trim()).filter((m) => m !== "");
  const body = {
    name: String(f.get("name") ?? ""),
    email: String(f.get("email") ?? ""),
    graduation_year: String(f.get("graduation_year") ?? ""),
    gpa: optionalNumber(f.get("gpa")),
    test_scores: sat === null ? null : { sat },
    state: String(f.get("state") ?? "") || null,
    intended_majors: majors
  };
  const res = await unwrap(state.client.POST("/v2/onboarding/minimal", { body }));
  state.profileComplete = res.profile_complete;
  await showCategories();
}
async function showCategories() {
  const { categories } = await unwrap(state.client.GET("/v2/onboarding/category-schools"));
  const list = $("category-list");
  list.replaceChildren(
    ...categories.map((c) => {
      const ex = c.example_school;
      return el(
        "article",
        { class: "category", "data-category-id": c.id },
        el("h3", {}, c.name),
        el("p", {}, c.description),
        ex ? el("p", { class: "example" }, `e.g. ${ex.name}, ${ex.city}, ${ex.state}`) : null,
        el(
          "div",
          { class: "actions" },
          el("button", { type: "button", "data-category-action": "left", title: "Not for me" }, "✕"),
          el("button", { type: "button", "data-category-action": "right", title: "I like this" }, "♥")
        )
      );
    })
  );
  showSection("categories");
}
async function swipeCategory(card2, direction) {
  const categoryId = card2.dataset.categoryId;
  const res = await unwrap(
    state.client.POST("/v2/onboarding/category-swipe", {
      body: { student_id: state.session.student_id, category_id: categoryId, direction }
    })
  );
  card2.dataset.choice = direction === "right" ? "liked" : "disliked";
  renderWeights(res.preference_weights, "prior weights from your categories");
}
async function startSwiping() {
  showSection("swiping");
  await refill();
  void refreshPanel(false);
}
async function refill() {
  const res = await unwrap(
    state.client.POST("/continuous-feed", { body: { student_id: state.session.student_id, limit: deckPage } })
  );
  const have = new Set(state.deck.map((d) => d.school_id));
  state.deck.push(...res.recommendations.filter((it) => !have.has(it.school_id)));
  setProgress(res.total_swipes, res.learning_state.phase, res.learning_state.progress, null);
  renderDeck(res.metadata.next_available_at ?? null);
}
function setProgress(count, phase, progress, message) {
  $("swipe-count").textContent = String(count);
  const p = $("phase");
  p.dataset.phase = phase;
  p.textContent = `${phase} · ${message ?? phaseText[phase]}`;
  const bar = $("progress");
  bar.value = progress;
  $("progress-text").textContent = `${Math.round(progress * 100)}% of the way to a stable model`;
}
function renderDeck(nextAvailableAt = null) {
  const deck = $("deck");
  const top = state.deck[0];
  if (!top) {
    const when = nextAvailableAt ? ` More from ${new Date(nextAvailableAt).toLocaleTimeString()}.` : "";
    deck.replaceChildren(el("p", { class: "empty" }, `No more schools to show right now.${when}`));
    return;
  }
  state.swipeId = crypto.randomUUID();
  state.shownAt = performance.now();
  deck.replaceChildren(card(top), el("p", { class: "remaining" }, `${state.deck.length - 1} more in this deck`));
}
function card(it) {
  const s = it.school;
  const facts = [];
  if (s.size != null) facts.push(`${s.size.toLocaleString("en-US")} undergraduates`);
  if (s.admission_rate != null) facts.push(`admits ${percent(s.admission_rate)}`);
  if (s.net_price != null) facts.push(`${money(s.net_price.amount)} a year`);
  if (s.graduation_rate != null) facts.push(`${percent(s.graduation_rate)} graduate`);
  const where = `${s.city}, ${s.state}` + (it.distance != null ? ` · ${Math.round(it.distance)} mi` : "");
  return el(
    "article",
    { class: "card", "data-school-id": it.school_id, "data-probe": String(it.is_probe) },
    el(
      "div",
      { class: "card-head" },
      el("span", { class: "grade" }, it.match_grade),
      el("span", { class: "score" }, percent(it.match_score)),
      el("span", { class: `band band-${it.admission_band}` }, it.admission_band),
      it.is_probe ? el("span", { class: "probe", title: "A school just past what the model has learned" }, "probe") : null
    ),
    el("h2", {}, it.name),
    el("p", { class: "where" }, where),
    facts.length ? el("ul", { class: "facts" }, ...facts.map((f) => el("li", {}, f))) : null,
    el("ul", { class: "reasons" }, ...it.match_reasons.map((r) => el("li", {}, r))),
    el(
      "div",
      { class: "actions" },
      el("button", { type: "button", "data-action": "dislike", title: "Not for me (←)" }, "✕ Not for me"),
      el("button", { type: "button", "data-action": "like", title: "Like (→)" }, "♥ Like")
    )
  );
}
async function swipe(direction) {
  const top = state.deck[0];
  if (!top || state.busy) {
    return;
  }
  state.busy = true;
  $("deck").classList.add("busy");
  try {
    const res = await unwrap(
      state.client.POST("/swipe", {
        body: {
          student_id: state.session.student_id,
          school_id: top.school_id,
          direction,
          swipe_id: state.swipeId,
          time_spent: Math.round((performance.now() - state.shownAt) / 100) / 10
        }
      })
    );
    showError(null);
    state.deck.shift();
    setProgress(res.swipe_count, res.learning_phase, res.learning_state.progress, res.ui_message);
    if (res.trigger_feedback) {
      showFeedback(top, direction, res.feedback_options);
    } else {
      hideFeedback();
    }
    scheduleRefresh(res.learning_state.updated_weights);
    if (state.deck.length === 0) {
      $("deck").replaceChildren(el("p", { class: "empty" }, "Loading more schools..."));
      await refill();
    } else {
      renderDeck();
    }
  } finally {
    state.busy = false;
    $("deck").classList.remove("busy");
  }
}
function showFeedback(it, direction, options) {
  const box = $("feedback");
  box.dataset.schoolId = it.school_id;
  const why = it.is_probe ? "It was a probe, a school just past what the model has learned so far." : "The model expected the other answer.";
  box.replaceChildren(
    el("p", {}, el("strong", {}, `Why did you ${direction === "right" ? "like" : "pass on"} ${it.name}?`), " ", why),
    el(
      "div",
      { class: "reasons" },
      ...options.map((r) => el("button", { type: "button", "data-reason": r }, reasonText[r])),
      el("button", { type: "button", "data-reason": "", class: "skip" }, "Skip")
    )
  );
  box.hidden = false;
}
function hideFeedback() {
  const box = $("feedback");
  box.hidden = true;
  box.replaceChildren();
  delete box.dataset.schoolId;
}
async function sendFeedback(schoolId, reason) {
  const res = await unwrap(
    state.client.POST("/feedback", { body: { student_id: state.session.student_id, school_id: schoolId, reason } })
  );
  hideFeedback();
  renderWeights(res.preference_weights, `after “${reasonText[reason]}”`);
  scheduleRefresh(false);
}
function scheduleRefresh(expectMove) {
  window.clearTimeout(state.refreshTimer);
  state.refreshTimer = window.setTimeout(() => void refreshPanel(expectMove), 400);
}
async function refreshPanel(expectMove) {
  const body = { student_id: state.session.student_id, limit: topSize };
  try {
    const res = await unwrap(
      state.profileComplete ? state.client.POST("/recommendations", { body }) : state.client.POST("/v2/recommendations", { body })
    );
    $("panel-note").textContent = `after ${res.total_swipes} swipes · ${res.metadata.total_count} schools left to rank`;
    const moved = renderWeights(res.learning_state.preference_weights, null);
    renderLearned(res.learning_state.learned_preferences ?? []);
    renderTop(res.recommendations);
    if (expectMove && !moved) {
      state.refreshTimer = window.setTimeout(() => void refreshPanel(false), 1200);
    }
  } catch (err) {
    if (err instanceof APIError && err.retryAfter !== null) {
      $("panel-note").textContent = `${err.message}; trying again in ${err.retryAfter} s`;
      state.refreshTimer = window.setTimeout(() => void refreshPanel(expectMove), err.retryAfter * 1e3);
      return;
    }
    showError(err);
  }
}
function renderLearned(lines) {
  const items = lines.length > 0 ? lines.map((line) => el("li", {}, line.charAt(0).toUpperCase() + line.slice(1))) : [el("li", { class: "muted" }, "Nothing yet: your swipes so far are what the weights say.")];
  $("learned").replaceChildren(...items);
}
function renderWeights(w, note) {
  const last = state.lastWeights;
  state.startWeights ??= w;
  const start = state.startWeights;
  let moved = false;
  const rows = weightLabels.map(([key, label, help]) => {
    const v = w[key];
    const delta = last ? v - last[key] : 0;
    if (Math.abs(delta) >= 5e-4) {
      moved = true;
    }
    const deltaText = Math.abs(delta) >= 5e-4 ? `${delta > 0 ? "+" : "−"}${Math.abs(delta).toFixed(3)}` : "";
    return el(
      "div",
      { class: "weight", "data-weight": key, title: help },
      el("span", { class: "label" }, label),
      el(
        "span",
        { class: "bar" },
        el("span", { class: "fill", style: `width:${(v * 100).toFixed(1)}%` }),
        el("span", { class: "start", style: `left:${(start[key] * 100).toFixed(1)}%`, title: "at the start" })
      ),
      el("span", { class: "value" }, v.toFixed(3)),
      el("span", { class: `delta ${delta > 0 ? "up" : "down"}` }, deltaText)
    );
  });
  $("weights").replaceChildren(...rows);
  if (note !== null) {
    $("panel-note").textContent = note;
  }
  state.lastWeights = w;
  return moved;
}
function renderTop(items) {
  const before = state.lastTop;
  const rows = items.map((it, i) => {
    const was = before.indexOf(it.school_id);
    let move = "new";
    let cls = "new";
    if (before.length === 0) {
      move = "";
      cls = "";
    } else if (was === i) {
      move = "=";
      cls = "same";
    } else if (was >= 0) {
      move = was > i ? `▲${was - i}` : `▼${i - was}`;
      cls = was > i ? "up" : "down";
    }
    return el(
      "li",
      { "data-school-id": it.school_id },
      el(
        "div",
        { class: "top-head" },
        el("span", { class: `move ${cls}` }, move),
        el("span", { class: "name" }, it.name),
        el("span", { class: "grade" }, `${it.match_grade} ${percent(it.match_score)}`),
        el("span", { class: `band band-${it.admission_band}` }, it.admission_band),
        it.is_probe ? el("span", { class: "probe" }, "probe") : null
      ),
      el("ul", { class: "reasons" }, ...it.match_reasons.slice(0, 3).map((r) => el("li", {}, r)))
    );
  });
  $("top").replaceChildren(...rows);
  state.lastTop = items.map((it) => it.school_id);
}
function act(fn) {
  fn().catch(showError);
}
function wire() {
  $("onboarding-form").addEventListener("submit", (ev) => act(() => onboard(ev)));
  $("category-list").addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-category-action]");
    const c = b?.closest("[data-category-id]");
    if (b && c) {
      act(() => swipeCategory(c, b.dataset.categoryAction));
    }
  });
  $("start-swiping").addEventListener("click", () => act(startSwiping));
  $("deck").addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-action]");
    if (b) {
      act(() => swipe(b.dataset.action === "like" ? "right" : "left"));
    }
  });
  $("feedback").addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-reason]");
    const school = $("feedback").dataset.schoolId;
    if (!b || !school) {
      return;
    }
    if (b.dataset.reason === "") {
      hideFeedback();
      return;
    }
    act(() => sendFeedback(school, b.dataset.reason));
  });
  document.addEventListener("keydown", (ev) => {
    if ($("swiping").hidden || ev.target instanceof HTMLInputElement) {
      return;
    }
    if (ev.key === "ArrowRight") act(() => swipe("right"));
    if (ev.key === "ArrowLeft") act(() => swipe("left"));
  });
  $("new-student").addEventListener("click", () => act(() => begin(true)));
}
wire();
act(() => begin(false));
