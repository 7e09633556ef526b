// emqd dashboard: the only script (served from 'self', so the strict CSP
// allows it). Forms with data-confirm ask first; the pages work without it
// (every action is a plain POST form).
document.addEventListener("submit", function (e) {
  var f = e.target;
  var msg = f && f.getAttribute && f.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) { e.preventDefault(); }
});

// Auto-refresh: a page whose body has data-refresh="<seconds>" reloads
// itself after that long, unless a form field on it is focused or has
// been typed into (docs/operations.md §2.3); then it waits for the next
// period. Without this script the pages simply do not refresh.
(function () {
  var secs = parseInt(document.body && document.body.getAttribute("data-refresh"), 10);
  if (!(secs > 0)) { return; }
  var typed = false;
  document.addEventListener("input", function () { typed = true; });
  function busy() {
    var a = document.activeElement;
    return typed || (a && (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT"));
  }
  function tick() {
    if (busy()) { window.setTimeout(tick, secs * 1000); return; }
    window.location.reload();
  }
  window.setTimeout(tick, secs * 1000);
})();
