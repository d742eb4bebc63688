// cadillac serve: a running build's page follows it (server-sent events from
// /runs/<id>/stream). The fragments are rendered and escaped by the server's templates,
// the same ones the page was made with; this file only puts them in place.
"use strict";
(function () {
  // the runs page: its rows again every few seconds while the tab is in view (a run that
  // starts appears, a running one shows its progress)
  const table = document.querySelector("table.runs[data-refresh]");
  if (table) {
    const body = table.querySelector("tbody");
    const refresh = async () => {
      if (document.visibilityState !== "visible") return;
      try {
        const response = await fetch(table.dataset.refresh, { credentials: "same-origin" });
        if (response.ok) body.innerHTML = await response.text();
      } catch (e) {
        /* the server went away: the page keeps what it shows */
      }
    };
    setInterval(refresh, 2000);
  }

  const main = document.querySelector("main[data-stream]");
  if (!main || !window.EventSource) return;
  const source = new EventSource(main.dataset.stream);
  const data = (e) => JSON.parse(e.data);
  const container = (kind, phase) =>
    document.getElementById(kind + "-" + phase) || document.getElementById(kind + "-other");
  source.addEventListener("round", (e) => {
    const d = data(e);
    const list = container("rounds", d.phase);
    if (!list) return;
    const section = list.closest("section.phase");
    if (section) section.hidden = false;
    list.insertAdjacentHTML("beforeend", d.html);
    const none = document.getElementById("no-rounds");
    if (none) none.remove();
  });
  source.addEventListener("reflection", (e) => {
    const d = data(e);
    const box = container("reflections", d.phase);
    if (box) box.insertAdjacentHTML("beforeend", d.html);
  });
  source.addEventListener("head", (e) => {
    const head = document.getElementById("head");
    if (head) head.outerHTML = data(e).html;
  });
  source.addEventListener("end", (e) => {
    source.close();
    main.dataset.ended = data(e).status;
  });
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) main.dataset.ended = "lost";
  };
})();
