// Draws every ```mermaid block of a page (the sequence diagrams and the lifecycle the code
// generates) with Mermaid, loaded just before this script; the block's text stays the source.
(function () {
  "use strict";
  function draw() {
    if (typeof mermaid === "undefined") {
      return;
    }
    var blocks = document.querySelectorAll("code.language-mermaid");
    if (blocks.length === 0) {
      return;
    }
    var dark = ["coal", "navy", "ayu"].some(function (t) {
      return document.documentElement.classList.contains(t);
    });
    blocks.forEach(function (code) {
      var figure = document.createElement("pre");
      figure.className = "mermaid";
      figure.textContent = code.textContent;
      code.parentElement.replaceWith(figure);
    });
    mermaid.initialize({ startOnLoad: false, theme: dark ? "dark" : "default" });
    mermaid.run({ querySelector: "pre.mermaid" });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
