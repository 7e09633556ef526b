// emqd dashboard: the only script. Forms with data-confirm ask first; the
// pages work without it (every action is a plain POST form).
document.addEventListener("submit", function (e) {
  var f = e.target;
  var msg = f && f.getAttribute && f.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) { e.preventDefault(); }
});
