// kb site: search in the browser over window.KB_INDEX (id, kind, status, title, tags, text), which
// search-index.js sets (a script, not a fetch, so the site works from file:// too). Every word of the
// query must appear; title, id and tag matches rank first. No library.
(function () {
  "use strict";
  var script = document.currentScript;
  var list = document.getElementById("static-hits");
  var input = document.querySelector("form.search input[name=q]");
  var root = script.getAttribute("data-root");
  var params = new URLSearchParams(window.location.search);
  input.value = params.get("q") || "";
  function show(cards) {
    var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    list.textContent = "";
    if (!words.length) { return; }
    var scored = [];
    cards.forEach(function (c) {
      var head = (c.id + " " + c.title + " " + c.tags.join(" ")).toLowerCase();
      var all = head + " " + c.text.toLowerCase();
      if (!words.every(function (w) { return all.indexOf(w) >= 0; })) { return; }
      var score = words.filter(function (w) { return head.indexOf(w) >= 0; }).length;
      scored.push([score, c]);
    });
    scored.sort(function (a, b) { return b[0] - a[0] || a[1].id.localeCompare(b[1].id); });
    scored.slice(0, 50).forEach(function (pair) {
      var c = pair[1];
      var li = document.createElement("li");
      var a = document.createElement("a");
      a.href = root + "cards/" + c.id + "/index.html";
      a.textContent = c.title;
      var meta = document.createElement("span");
      meta.className = "note";
      meta.textContent = " " + c.kind + " · " + c.status;
      li.appendChild(a);
      li.appendChild(meta);
      list.appendChild(li);
    });
    if (!scored.length) { list.textContent = "Nothing matched."; }
  }
  var cards = window.KB_INDEX || [];
  show(cards);
  input.addEventListener("input", function () { show(cards); });
})();
