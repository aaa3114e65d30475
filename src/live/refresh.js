// The live page follows the run: every 2 s it asks psprobe for the page again with the entity
// tag it shows; psprobe answers 304 (nothing) until a segment finishes, then the new page,
// whose body replaces this one's. Nothing is fetched from anywhere else, and no framework.
(function () {
  "use strict";
  var EVERY_MS = 2000;
  function status() {
    return document.getElementById("live-status");
  }
  function poll() {
    var shown = status();
    var etag = shown ? shown.getAttribute("data-etag") : "";
    fetch(location.pathname, { cache: "no-store", headers: { "If-None-Match": etag } })
      .then(function (answer) {
        return answer.status === 200 ? answer.text() : null;
      })
      .then(
        function (text) {
          if (text) {
            var page = new DOMParser().parseFromString(text, "text/html");
            document.title = page.title;
            document.body.replaceWith(page.body);
          }
          setTimeout(poll, EVERY_MS);
        },
        function () {
          // psprobe stopped (or the run with it): the page keeps what it last showed.
          var now = status();
          if (now) {
            now.textContent = "psprobe no longer answers: this is the run as it last was. " + now.textContent;
            now.setAttribute("data-disconnected", "true");
          }
        }
      );
  }
  setTimeout(poll, EVERY_MS);
})();
