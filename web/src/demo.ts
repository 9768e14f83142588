// The demo page: a student's first run through the real API. Onboarding
// (POST /v2/onboarding/minimal), the six categories (GET
// /v2/onboarding/category-schools, POST /v2/onboarding/category-swipe), then
// a deck of the continuous feed (POST /continuous-feed) swiped one card at a
// time (POST /swipe, whose answer carries the exact count, the phase text and
// trigger_feedback; POST /feedback for the reason asked), beside a panel of
// the preference weights and the top of POST /recommendations, fetched
// again after each swipe.
//
// Marks the browser test drives: each card has data-school-id, its controls
// data-action="like" / "dislike"; #swipe-count, #phase (data-phase) and
// #feedback (shown after a probe swipe or a pattern break).
import { APIError, apiClient, loadSession, unwrap, type Client, type Schemas, type Session } from "./client";

type Item = Schemas["RecommendationItem"];
type Weights = Schemas["PreferenceWeights"];
type Phase = Schemas["LearningPhase"];
type Reason = Schemas["FeedbackReason"];
type Direction = Schemas["Direction"];

/** The API's text for each phase (SwipeResponse.ui_message), shown before the first swipe. */
const phaseText: Record<Phase, Schemas["SwipeResponse"]["ui_message"]> = {
  discovery: "Learning your preferences...",
  refinement: "Refining matches...",
  stable: "Personalized for you",
};

/** The weights the document names (PreferenceWeights without its open-ended extra keys). */
type WeightKey = keyof { [K in keyof Weights as string extends K ? never : K]: Weights[K] };

const weightLabels: ReadonlyArray<readonly [WeightKey, string, string]> = [
  ["cost_weight", "Cost", "importance of a low net price"],
  ["aid_weight", "Aid", "importance of financial aid"],
  ["distance_weight", "Distance", "importance of being near home"],
  ["outcomes_weight", "Outcomes", "importance of graduation and earnings"],
  ["campus_weight", "Campus", "importance of size and setting fit"],
  ["program_weight", "Programs", "importance of offering your majors"],
  ["academic_selectivity", "Selectivity", "preferred selectivity (higher: more selective)"],
  ["size_preference", "Size", "preferred size (0 very small, 1 very large)"],
];

const reasonText: Record<Reason, string> = {
  too_expensive: "Too expensive",
  wrong_location: "Wrong location",
  not_my_major: "Not my major",
  too_selective: "Too selective",
  perfect_match: "Perfect match",
};

const deckPage = 10; // items asked of the continuous feed when the deck runs out
const topSize = 5; // items of POST /recommendations in the panel

interface State {
  session: Session;
  client: Client;
  profileComplete: boolean;
  deck: Item[];
  swipeId: string; // the top card's swipe_id, kept across retries of the same swipe
  shownAt: number;
  busy: boolean;
  startWeights: Weights | null;
  lastWeights: Weights | null;
  lastTop: string[];
  refreshTimer: number | undefined;
}

let state: State;

// ---- DOM helpers --------------------------------------------------------

function $<T extends HTMLElement = HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (!node) {
    throw new Error(`#${id} is missing from the page`);
  }
  return node as T;
}

type Child = Node | string | null | undefined | false;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c !== null && c !== undefined && c !== false) {
      node.append(c);
    }
  }
  return node;
}

function showSection(id: "onboarding" | "categories" | "swiping"): void {
  for (const s of ["onboarding", "categories", "swiping"]) {
    $(s).hidden = s !== id;
  }
}

function showError(err: unknown): void {
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

function percent(x: number): string {
  return `${Math.round(x * 100)}%`;
}

function money(x: number): string {
  return `$${x.toLocaleString("en-US")}`;
}

// ---- session and onboarding ---------------------------------------------

async function begin(fresh: boolean): Promise<void> {
  const session = await loadSession(fresh);
  if (fresh) {
    window.clearTimeout(state.refreshTimer); // the previous student's pending panel refresh
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
    refreshTimer: undefined,
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

function optionalNumber(v: FormDataEntryValue | null): number | null {
  const s = String(v ?? "").trim();
  return s === "" ? null : Number(s);
}

async function onboard(ev: SubmitEvent): Promise<void> {
  ev.preventDefault();
  const form = ev.currentTarget as HTMLFormElement;
  const f = new FormData(form);
  const sat = optionalNumber(f.get("sat"));
  const majors = String(f.get("majors") ?? "")
    .split(",")
    .map((m) => m.trim())
    .filter((m) => m !== "");
  const body: Schemas["OnboardingRequest"] = {
    name: String(f.get("name") ?? ""),
    email: String(f.get("email") ?? ""),
    graduation_year: String(f.get("graduation_year") ?? ""),
    gpa: optionalNumber(f.get("gpa")),
    test_scores: sat === null ? null : { sat },
    state: String(f.get("state") ?? "") || null,
    intended_majors: majors,
  };
  const res = await unwrap(state.client.POST("/v2/onboarding/minimal", { body }));
  state.profileComplete = res.profile_complete;
  await showCategories();
}

async function showCategories(): Promise<void> {
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
          el("button", { type: "button", "data-category-action": "right", title: "I like this" }, "♥"),
        ),
      );
    }),
  );
  showSection("categories");
}

async function swipeCategory(card: HTMLElement, direction: Direction): Promise<void> {
  const categoryId = card.dataset.categoryId as Schemas["CategoryId"];
  const res = await unwrap(
    state.client.POST("/v2/onboarding/category-swipe", {
      body: { student_id: state.session.student_id, category_id: categoryId, direction },
    }),
  );
  card.dataset.choice = direction === "right" ? "liked" : "disliked";
  renderWeights(res.preference_weights, "prior weights from your categories");
}

// ---- the deck -------------------------------------------------------------

async function startSwiping(): Promise<void> {
  showSection("swiping");
  await refill();
  void refreshPanel(false);
}

/** Asks the continuous feed for the next cards (those not swiped and not shown within the cooldown). */
async function refill(): Promise<void> {
  const res = await unwrap(
    state.client.POST("/continuous-feed", { body: { student_id: state.session.student_id, limit: deckPage } }),
  );
  const have = new Set(state.deck.map((d) => d.school_id));
  state.deck.push(...res.recommendations.filter((it) => !have.has(it.school_id)));
  setProgress(res.total_swipes, res.learning_state.phase, res.learning_state.progress, null);
  renderDeck(res.metadata.next_available_at ?? null);
}

function setProgress(count: number, phase: Phase, progress: number, message: string | null): void {
  $("swipe-count").textContent = String(count);
  const p = $("phase");
  p.dataset.phase = phase;
  p.textContent = `${phase} · ${message ?? phaseText[phase]}`;
  const bar = $<HTMLProgressElement>("progress");
  bar.value = progress;
  $("progress-text").textContent = `${Math.round(progress * 100)}% of the way to a stable model`;
}

function renderDeck(nextAvailableAt: string | null = null): void {
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

function card(it: Item): HTMLElement {
  const s = it.school;
  const facts: string[] = [];
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
      it.is_probe ? el("span", { class: "probe", title: "A school just past what the model has learned" }, "probe") : null,
    ),
    el("h2", {}, it.name),
    el("p", { class: "where" }, where),
    facts.length ? el("ul", { class: "facts" }, ...facts.map((f) => el("li", {}, f))) : null,
    el("ul", { class: "reasons" }, ...it.match_reasons.map((r) => el("li", {}, r))),
    el(
      "div",
      { class: "actions" },
      el("button", { type: "button", "data-action": "dislike", title: "Not for me (←)" }, "✕ Not for me"),
      el("button", { type: "button", "data-action": "like", title: "Like (→)" }, "♥ Like"),
    ),
  );
}

async function swipe(direction: Direction): Promise<void> {
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
          time_spent: Math.round((performance.now() - state.shownAt) / 100) / 10,
        },
      }),
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

// ---- feedback -------------------------------------------------------------

function showFeedback(it: Item, direction: Direction, options: Reason[]): void {
  const box = $("feedback");
  box.dataset.schoolId = it.school_id;
  const why = it.is_probe
    ? "It was a probe, a school just past what the model has learned so far."
    : "The model expected the other answer.";
  box.replaceChildren(
    el("p", {}, el("strong", {}, `Why did you ${direction === "right" ? "like" : "pass on"} ${it.name}?`), " ", why),
    el(
      "div",
      { class: "reasons" },
      ...options.map((r) => el("button", { type: "button", "data-reason": r }, reasonText[r])),
      el("button", { type: "button", "data-reason": "", class: "skip" }, "Skip"),
    ),
  );
  box.hidden = false;
}

function hideFeedback(): void {
  const box = $("feedback");
  box.hidden = true;
  box.replaceChildren();
  delete box.dataset.schoolId;
}

async function sendFeedback(schoolId: string, reason: Reason): Promise<void> {
  const res = await unwrap(
    state.client.POST("/feedback", { body: { student_id: state.session.student_id, school_id: schoolId, reason } }),
  );
  hideFeedback();
  renderWeights(res.preference_weights, `after “${reasonText[reason]}”`);
  scheduleRefresh(false);
}

// ---- the panel: weights and the top of POST /recommendations ---------------

function scheduleRefresh(expectMove: boolean): void {
  window.clearTimeout(state.refreshTimer);
  // The worker folds a swipe into the model about 50 ms after it is recorded.
  state.refreshTimer = window.setTimeout(() => void refreshPanel(expectMove), 400);
}

async function refreshPanel(expectMove: boolean): Promise<void> {
  const body = { student_id: state.session.student_id, limit: topSize };
  try {
    // POST /recommendations needs a complete profile; /v2 serves any.
    const res = await unwrap(
      state.profileComplete
        ? state.client.POST("/recommendations", { body })
        : state.client.POST("/v2/recommendations", { body }),
    );
    $("panel-note").textContent = `after ${res.total_swipes} swipes · ${res.metadata.total_count} schools left to rank`;
    const moved = renderWeights(res.learning_state.preference_weights, null);
    renderLearned(res.learning_state.learned_preferences ?? []);
    renderTop(res.recommendations);
    if (expectMove && !moved) {
      // The swipe moved the model but the worker has not folded it yet.
      state.refreshTimer = window.setTimeout(() => void refreshPanel(false), 1200);
    }
  } catch (err) {
    if (err instanceof APIError && err.retryAfter !== null) {
      $("panel-note").textContent = `${err.message}; trying again in ${err.retryAfter} s`;
      state.refreshTimer = window.setTimeout(() => void refreshPanel(expectMove), err.retryAfter * 1000);
      return;
    }
    showError(err);
  }
}

/** Shows what the model learned beyond the eight weights, in the words the API gives. */
function renderLearned(lines: string[]): void {
  const items =
    lines.length > 0
      ? lines.map((line) => el("li", {}, line.charAt(0).toUpperCase() + line.slice(1)))
      : [el("li", { class: "muted" }, "Nothing yet: your swipes so far are what the weights say.")];
  $("learned").replaceChildren(...items);
}

/** Shows the weights, each with its move since the last shown and its start; reports whether any moved. */
function renderWeights(w: Weights, note: string | null): boolean {
  const last = state.lastWeights;
  state.startWeights ??= w;
  const start = state.startWeights;
  let moved = false;
  const rows = weightLabels.map(([key, label, help]) => {
    const v = w[key];
    const delta = last ? v - last[key] : 0;
    if (Math.abs(delta) >= 0.0005) {
      moved = true;
    }
    const deltaText = Math.abs(delta) >= 0.0005 ? `${delta > 0 ? "+" : "−"}${Math.abs(delta).toFixed(3)}` : "";
    return el(
      "div",
      { class: "weight", "data-weight": key, title: help },
      el("span", { class: "label" }, label),
      el(
        "span",
        { class: "bar" },
        el("span", { class: "fill", style: `width:${(v * 100).toFixed(1)}%` }),
        el("span", { class: "start", style: `left:${(start[key] * 100).toFixed(1)}%`, title: "at the start" }),
      ),
      el("span", { class: "value" }, v.toFixed(3)),
      el("span", { class: `delta ${delta > 0 ? "up" : "down"}` }, deltaText),
    );
  });
  $("weights").replaceChildren(...rows);
  if (note !== null) {
    $("panel-note").textContent = note;
  }
  state.lastWeights = w;
  return moved;
}

function renderTop(items: Item[]): void {
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
        it.is_probe ? el("span", { class: "probe" }, "probe") : null,
      ),
      el("ul", { class: "reasons" }, ...it.match_reasons.slice(0, 3).map((r) => el("li", {}, r))),
    );
  });
  $("top").replaceChildren(...rows);
  state.lastTop = items.map((it) => it.school_id);
}

// ---- wiring ---------------------------------------------------------------

/** Runs an action from a click, showing its error. */
function act(fn: () => Promise<void>): void {
  fn().catch(showError);
}

function wire(): void {
  $<HTMLFormElement>("onboarding-form").addEventListener("submit", (ev) => act(() => onboard(ev)));
  $("category-list").addEventListener("click", (ev) => {
    const b = (ev.target as HTMLElement).closest<HTMLButtonElement>("button[data-category-action]");
    const c = b?.closest<HTMLElement>("[data-category-id]");
    if (b && c) {
      act(() => swipeCategory(c, b.dataset.categoryAction as Direction));
    }
  });
  $("start-swiping").addEventListener("click", () => act(startSwiping));
  $("deck").addEventListener("click", (ev) => {
    const b = (ev.target as HTMLElement).closest<HTMLButtonElement>("button[data-action]");
    if (b) {
      act(() => swipe(b.dataset.action === "like" ? "right" : "left"));
    }
  });
  $("feedback").addEventListener("click", (ev) => {
    const b = (ev.target as HTMLElement).closest<HTMLButtonElement>("button[data-reason]");
    const school = $("feedback").dataset.schoolId;
    if (!b || !school) {
      return;
    }
    if (b.dataset.reason === "") {
      hideFeedback();
      return;
    }
    act(() => sendFeedback(school, b.dataset.reason as Reason));
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
