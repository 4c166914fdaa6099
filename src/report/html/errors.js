// Runs first (in <head>): every error of the page and of its flame graphs is kept in
// window.upcmpErrors and shown at the top of the page, so a broken page says so, and the
// browser test reads the list. A request the page's policy blocks counts as an error.
(function () {
  "use strict";
  var errors = [];
  window.upcmpErrors = errors;
  function show(msg) {
    var box = document.getElementById("upcmp-errors");
    if (!box) {
      box = document.createElement("div");
      box.id = "upcmp-errors";
      box.className = "errors";
      document.body.insertBefore(box, document.body.firstChild);
    }
    var line = document.createElement("div");
    line.textContent = "Error in this page: " + msg;
    box.appendChild(line);
  }
  var shown = 0;
  function flush() {
    while (document.body && shown < errors.length) {
      show(errors[shown++]);
    }
  }
  function report(msg) {
    errors.push(String(msg));
    flush();
  }
  window.upcmpError = report;
  document.addEventListener("DOMContentLoaded", flush);
  window.addEventListener("error", function (e) {
    report((e.message || "error") + (e.filename ? " (" + e.filename + ":" + e.lineno + ")" : ""));
  });
  window.addEventListener("unhandledrejection", function (e) {
    report("unhandled rejection: " + e.reason);
  });
  document.addEventListener("securitypolicyviolation", function (e) {
    report("blocked by the page's policy (" + e.violatedDirective + "): " + e.blockedURI);
  });
  var consoleError = console.error;
  console.error = function () {
    report(Array.prototype.join.call(arguments, " "));
    return consoleError.apply(console, arguments);
  };
})();
