// cotal console: reloads server-rendered views, follows the feed over server-sent events,
// and posts operator actions. No framework, no build step.
"use strict";

const feedMax = 500;
const feed = []; // oldest first; the list shows newest first

// inSpace is path with the page's space and params in its query: every view, the event
// stream and every action is of the space the page shows. Paths are relative, so they stay
// under the session's root (/s/ID/) the page was loaded from.
function inSpace(path, params) {
  const q = new URLSearchParams(params);
  q.set("space", document.body.dataset.space);
  return `${path}?${q}`;
}

// reload replaces one view with its fragment, rendered (and escaped) by the server. The
// params given (a page of a list, a channel's history) are kept for the view's next reloads.
async function reload(name, params) {
  const el = document.querySelector(`[data-view="${name}"]`);
  if (!el) return;
  if (params !== undefined) el.dataset.params = new URLSearchParams(params).toString();
  const res = await fetch(inSpace(`view/${name}`, el.dataset.params), { credentials: "same-origin" });
  if (res.ok) el.innerHTML = await res.text();
}

function reloadAll() {
  for (const v of ["roster", "agents", "channels", "delivery", "health", "plots"]) reload(v);
  // Until a channel is chosen, the history view only lists channels: keep that list current.
  const hist = document.querySelector(".history-form select");
  if (hist && !hist.value) reload("history");
}

// filters are the feed's current channel, sender and kind filters.
function filters() {
  const f = new FormData(document.getElementById("feed-filter"));
  return { channel: f.get("channel").trim(), sender: f.get("sender").trim().toLowerCase(), kind: f.get("kind") };
}

function matches(it, f) {
  return (!f.channel || it.channel === f.channel) &&
    (!f.sender || it.from.toLowerCase().includes(f.sender)) &&
    (!f.kind || it.kind === f.kind);
}

function feedLine(it) {
  const li = document.createElement("li");
  li.className = `kind-${it.kind}` + (it.stored ? " stored" : "");
  const where = it.kind === "channel" ? `#${it.channel}` : `${it.kind} → ${it.to}`;
  for (const [tag, cls, text] of [["time", "", it.time], ["span", "where", where], ["b", "", it.from], ["span", "text", it.text]]) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    e.textContent = text;
    li.append(e, " ");
  }
  return li;
}

function renderFeed() {
  const f = filters();
  const list = document.getElementById("feed-list");
  list.replaceChildren(...feed.filter((it) => matches(it, f)).slice(-200).reverse().map(feedLine));
}

function addMessage(it) {
  if (feed.some((x) => x.id === it.id)) return;
  feed.push(it);
  if (feed.length > feedMax) feed.shift();
  if (matches(it, filters())) {
    const list = document.getElementById("feed-list");
    list.prepend(feedLine(it));
    while (list.children.length > 200) list.lastChild.remove();
  }
}

function follow() {
  const live = document.getElementById("live");
  const es = new EventSource(inSpace("events"));
  es.addEventListener("open", () => { live.textContent = "live"; live.className = "live on"; });
  es.addEventListener("error", () => { live.textContent = "reconnecting…"; live.className = "live off"; });
  es.addEventListener("message", (ev) => addMessage(JSON.parse(ev.data)));
  es.addEventListener("roster", () => reload("roster"));
  es.addEventListener("tick", reloadAll);
}

// act posts an action form from this page (its session's path, cookie and Origin) and shows
// its outcome in the form's output: the error's text, or for a mint the downloaded file's name.
async function act(form) {
  const out = form.querySelector(".result");
  out.textContent = "…";
  const res = await fetch(inSpace(form.dataset.action), {
    method: "POST", credentials: "same-origin", body: new URLSearchParams(new FormData(form)),
  });
  if (!res.ok) {
    const body = await res.json().catch(() => ({ error: res.statusText }));
    out.textContent = `error: ${body.error}`;
    out.className = "result error";
    return;
  }
  out.className = "result ok";
  if (form.dataset.download) {
    const name = /filename="([^"]+)"/.exec(res.headers.get("Content-Disposition") || "")?.[1] || "cotal.creds";
    const a = document.createElement("a");
    a.href = URL.createObjectURL(await res.blob());
    a.download = name;
    a.click();
    URL.revokeObjectURL(a.href);
    out.textContent = `minted; downloaded ${name} (shown this once, keep it safe)`;
  } else {
    out.textContent = "done";
  }
  reload(form.dataset.refresh);
}

function historyParams(form, page) {
  const channel = new FormData(form).get("channel");
  return channel ? { channel, page } : {};
}

document.addEventListener("submit", (ev) => {
  const form = ev.target.closest("form.action");
  if (form) { ev.preventDefault(); act(form); }
  if (ev.target.id === "feed-filter" || ev.target.closest(".history-form")) ev.preventDefault();
});

document.addEventListener("change", (ev) => {
  const hist = ev.target.closest(".history-form");
  if (hist) reload("history", historyParams(hist, 0));
  if (ev.target.closest("#space-form")) ev.target.form.submit();
});

document.addEventListener("click", (ev) => {
  const btn = ev.target.closest(".history-form button[data-page]");
  if (btn) reload("history", historyParams(btn.form, btn.dataset.page));
  // A list's previous/next link moves that view only; without script it loads the page there.
  const a = ev.target.closest("[data-view] a[data-params]");
  if (a) { ev.preventDefault(); reload(a.closest("[data-view]").dataset.view, a.dataset.params); }
});

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("feed-filter").addEventListener("input", renderFeed);
  follow();
});
