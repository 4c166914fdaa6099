// The page's interactive parts: the function tables (sortable, filterable, drawn a
// screenful at a time so that 10^5 rows open fast), the flame graphs (each in its own
// srcdoc frame, so inferno's script runs unchanged and graphs do not clash) and the
// counters. Field names are data.js's business.
window.upcmp.page = (function () {
  "use strict";
  var D = window.upcmp.data;
  var ROW_HEIGHT = 22; // px; the CSS gives every row this height
  var SCREEN_ROWS = 24; // rows a table shows before it scrolls
  var SPARE_ROWS = 12; // rows drawn above and below the visible ones

  function element(tag, className, text) {
    var e = document.createElement(tag);
    if (className) {
      e.className = className;
    }
    if (text !== undefined) {
      e.textContent = text;
    }
    return e;
  }

  function FunctionTable(host, t) {
    var self = this;
    this.t = t;
    this.order = [];
    this.sortColumn = null;
    this.descending = true;
    this.lowerNames = null;
    var largest = 0;
    var bar = t.columns.filter(function (c) {
      return c.kind === "bar";
    })[0];
    for (var r = 0; bar && r < t.length; r++) {
      largest = Math.max(largest, Math.abs(t.value(r, bar.key) || 0));
    }
    this.barScale = largest > 0 ? 100 / largest : 0;

    var controls = element("div", "controls");
    this.filter = element("input", "filter");
    this.filter.type = "search";
    this.filter.placeholder = "filter by name";
    this.filter.setAttribute("aria-label", "filter functions by name");
    this.noise = element("input", "show-noise");
    this.noise.type = "checkbox";
    this.noise.checked = !D.hideNoise;
    this.below = element("input", "show-below");
    this.below.type = "checkbox";
    var belowCount = 0;
    for (r = 0; r < t.length; r++) {
      belowCount += t.aboveCutoff(r) ? 0 : 1;
    }
    var noiseLabel = element("label", null, " noise rows");
    noiseLabel.insertBefore(this.noise, noiseLabel.firstChild);
    var belowLabel = element("label", null, " rows below the cutoff of " + t.cutoffPct + "% (" + belowCount + ")");
    belowLabel.insertBefore(this.below, belowLabel.firstChild);
    this.count = element("span", "count");
    [this.filter, noiseLabel, belowLabel, this.count].forEach(function (e) {
      controls.appendChild(e);
    });

    // The test's annotated functions, by name: their names in the table open them.
    this.annotated = {};
    var section = host.closest("section.test");
    Array.prototype.forEach.call(section ? section.querySelectorAll("details.annotate") : [], function (d) {
      self.annotated[d.dataset.function] = d;
    });

    this.scroller = element("div", "scroll");
    var table = element("table", "functions");
    var head = element("tr");
    this.headers = t.columns.map(function (c) {
      var th = element("th", c.kind === "name" ? "name" : c.kind === "verdict" ? "num vcol" : "num", c.label);
      th.title = "sort by " + c.label;
      th.addEventListener("click", function () {
        self.sortBy(c);
      });
      head.appendChild(th);
      return th;
    });
    var thead = element("thead");
    thead.appendChild(head);
    this.body = element("tbody");
    this.body.addEventListener("click", function (e) {
      var td = e.target.closest("td.annotated");
      if (td) {
        openAnnotation(self.annotated[annotatedName(td.textContent)]);
      }
    });
    table.appendChild(thead);
    table.appendChild(this.body);
    this.scroller.appendChild(table);
    host.appendChild(controls);
    host.appendChild(this.scroller);

    var pending = false;
    this.scroller.addEventListener("scroll", function () {
      if (!pending) {
        pending = true;
        window.requestAnimationFrame(function () {
          pending = false;
          self.render();
        });
      }
    });
    this.filter.addEventListener("input", function () {
      self.update();
    });
    this.noise.addEventListener("change", function () {
      self.update();
    });
    this.below.addEventListener("change", function () {
      self.update();
    });
    this.update();
  }

  // A row's function as the annotations name it: a module's row is "name [module]".
  function annotatedName(cell) {
    return cell.split(" [")[0];
  }

  // The page's other listed functions keep their lines in a <template>, rendered the
  // first time the row is opened.
  function fillAnnotation(d) {
    var t = d.querySelector(":scope > template");
    if (t) {
      d.insertBefore(t.content, t);
      d.removeChild(t);
    }
  }
  function openAnnotation(d) {
    fillAnnotation(d);
    d.open = true;
    d.scrollIntoView({ block: "start" });
  }
  document.querySelectorAll("details.annotate.on-demand > summary").forEach(function (s) {
    s.addEventListener("click", function () {
      fillAnnotation(s.parentNode);
    });
  });
  document.addEventListener(
    "toggle",
    function (e) {
      if (e.target.open && e.target.classList && e.target.classList.contains("on-demand")) {
        fillAnnotation(e.target);
      }
    },
    true
  );

  // Clicking a column sorts by it, largest (or A first) first; clicking it again turns
  // the order round.
  FunctionTable.prototype.sortBy = function (c) {
    if (this.sortColumn === c) {
      this.descending = !this.descending;
    } else {
      this.sortColumn = c;
      this.descending = c.kind !== "name";
    }
    var self = this;
    this.headers.forEach(function (th, j) {
      var on = self.t.columns[j] === c;
      th.setAttribute("aria-sort", on ? (self.descending ? "descending" : "ascending") : "none");
    });
    this.update();
  };

  // Which rows show, in which order; then draw.
  FunctionTable.prototype.update = function () {
    var t = this.t;
    var query = this.filter.value.toLowerCase();
    if (query && !this.lowerNames) {
      this.lowerNames = [];
      for (var i = 0; i < t.length; i++) {
        this.lowerNames.push(t.name(i).toLowerCase());
      }
    }
    var order = [];
    for (var r = 0; r < t.length; r++) {
      if ((this.below.checked || t.aboveCutoff(r)) &&
          (this.noise.checked || t.significant(r)) &&
          (!query || this.lowerNames[r].indexOf(query) >= 0)) {
        order.push(r);
      }
    }
    var c = this.sortColumn;
    if (c) {
      var sign = this.descending ? -1 : 1;
      var keys = {};
      order.forEach(function (r) {
        keys[r] = t.value(r, c.key);
      });
      order.sort(function (a, b) {
        var x = keys[a];
        var y = keys[b];
        // Empty cells last whichever way; ties keep the report's order.
        if (x === null || y === null) {
          return x === y ? a - b : x === null ? 1 : -1;
        }
        if (typeof x === "string") {
          x = x.toLowerCase();
          y = y.toLowerCase();
        }
        return x < y ? -sign : x > y ? sign : a - b;
      });
    }
    this.order = order;
    this.count.textContent = order.length + " of " + t.length + " functions shown";
    this.scroller.style.height = (Math.min(Math.max(order.length, 1), SCREEN_ROWS) + 1.5) * ROW_HEIGHT + "px";
    this.render();
  };

  // Draws the rows in view and a spacer for the rest.
  FunctionTable.prototype.render = function () {
    var t = this.t;
    var n = this.order.length;
    var first = Math.max(0, Math.floor(this.scroller.scrollTop / ROW_HEIGHT) - SPARE_ROWS);
    var last = Math.min(n, first + SCREEN_ROWS + 2 * SPARE_ROWS);
    var rows = document.createDocumentFragment();
    var spacer = function (count) {
      var tr = element("tr", "spacer");
      tr.style.height = count * ROW_HEIGHT + "px";
      return tr;
    };
    if (first > 0) {
      rows.appendChild(spacer(first));
    }
    for (var p = first; p < last; p++) {
      var r = this.order[p];
      var tr = element("tr", t.significant(r) ? "significant" : "noise");
      if (!t.aboveCutoff(r)) {
        tr.className += " below";
      }
      tr.dataset.pos = p;
      for (var j = 0; j < t.columns.length; j++) {
        var c = t.columns[j];
        var v = t.value(r, c.key);
        var td = element("td", c.kind === "name" ? "name" : "num", c.format(v));
        if (c.kind === "name") {
          var hint = t.hint(r);
          td.title = hint ? td.textContent + "\n" + hint : td.textContent;
          if (this.annotated[annotatedName(td.textContent)]) {
            td.className += " annotated";
            td.title += "\nclick: its source lines and instructions, below the table";
          }
        } else if (c.kind === "verdict") {
          td.className = "verdict vcol " + td.textContent;
        } else if (c.kind === "bar" && typeof v === "number" && v !== 0) {
          var b = element("span", "dbar " + (v > 0 ? "up" : "down"));
          b.style.width = Math.max(1, Math.abs(v) * this.barScale * 0.5) + "%";
          td.insertBefore(b, td.firstChild);
        }
        tr.appendChild(td);
      }
      rows.appendChild(tr);
    }
    if (last < n) {
      rows.appendChild(spacer(n - last));
    }
    if (n === 0) {
      var empty = element("tr", "empty");
      var td0 = element("td", null, "no function matches");
      td0.colSpan = t.columns.length;
      empty.appendChild(td0);
      rows.appendChild(empty);
    }
    this.body.textContent = "";
    this.body.appendChild(rows);
  };

  // inferno's SVG, as the body of an HTML document of its own. Its script keeps zoom and
  // search state in the URL, which a srcdoc document cannot change: that is switched off;
  // its errors are reported to the page.
  var FLAME_HEAD =
    "<!DOCTYPE html><html><head><meta charset=\"utf-8\">" +
    "<style>html,body{margin:0;background:#fff}body>svg{display:block;width:100%}</style>" +
    "<script>window.addEventListener('error',function(e){try{parent.upcmpError('flame graph: '+e.message)}catch(x){}});" +
    "history.replaceState=function(){};<\/script></head><body>";

  function drawFlame(host) {
    if (host.dataset.drawn) {
      return;
    }
    host.dataset.drawn = "yes";
    var frame = element("iframe", "flame");
    frame.title = "differential flame graph";
    frame.addEventListener("load", function () {
      var svg = frame.contentDocument && frame.contentDocument.querySelector("body > svg");
      if (svg) {
        frame.style.height = Math.ceil(svg.getBoundingClientRect().height) + "px";
      }
      host.dataset.loaded = "yes";
    });
    frame.srcdoc = FLAME_HEAD + D.flameSvg(host.dataset.svg) + "</body></html>";
    host.appendChild(frame);
  }

  // The buttons before a graph with two shapes: run 2's (widths are run 2's samples) or
  // run 1's (the frames that vanished in run 2 drawn). The graph is drawn anew in the shape.
  function showShape(host, side) {
    var id = host.dataset["svg" + side];
    if (!id || host.dataset.side === side) {
      return;
    }
    host.dataset.side = side;
    host.dataset.svg = id;
    var buttons = host.previousElementSibling;
    Array.prototype.forEach.call(buttons.querySelectorAll("button.shape"), function (b) {
      b.setAttribute("aria-pressed", b.dataset.side === side ? "true" : "false");
    });
    var frame = host.querySelector("iframe");
    if (frame) {
      host.dataset.loaded = "no";
      frame.title = "differential flame graph, run " + side + "'s shape";
      frame.srcdoc = FLAME_HEAD + D.flameSvg(id) + "</body></html>";
    }
  }

  document.querySelectorAll("div.shapes").forEach(function (buttons) {
    var host = buttons.nextElementSibling;
    buttons.addEventListener("click", function (e) {
      var b = e.target.closest("button.shape");
      if (b && host) {
        showShape(host, b.dataset.side);
      }
    });
  });

  function drawCounters(host, counters) {
    host.appendChild(element("h3", null, "Counters"));
    var table = element("table", "counters");
    var head = element("tr");
    counters.columns.forEach(function (k) {
      head.appendChild(element("th", null, k));
    });
    var thead = element("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    var body = element("tbody");
    counters.rows.forEach(function (cells, k) {
      var tr = element("tr");
      if (counters.tips[k]) {
        tr.title = counters.tips[k];
      }
      cells.forEach(function (text, j) {
        tr.appendChild(element("td", j === 0 ? "name" : "num", text));
      });
      body.appendChild(tr);
    });
    table.appendChild(body);
    host.appendChild(table);
  }

  var tables = [];
  var flames = Array.prototype.slice.call(document.querySelectorAll("div.flame[data-svg]"));

  // Every function table drawn anew from the view's rows ("system" or "test"); the
  // Profiling Summaries and notes of the other view are hidden by the style sheet.
  function drawTables(view) {
    tables.length = 0;
    document.querySelectorAll("div.ftable[data-test]").forEach(function (host) {
      Array.prototype.slice.call(host.children).forEach(function (c) {
        if (c.tagName !== "NOSCRIPT") {
          host.removeChild(c);
        }
      });
      var t = D.functionTable(Number(host.dataset.test), view);
      if (t) {
        tables.push(new FunctionTable(host, t));
      }
    });
  }

  function setView(view) {
    if (view !== "test" || !D.hasTestShare) {
      view = "system";
    }
    document.body.dataset.view = view;
    document.querySelectorAll("button.view").forEach(function (b) {
      b.setAttribute("aria-pressed", b.dataset.view === view ? "true" : "false");
    });
    drawTables(view);
  }

  document.querySelectorAll("button.view").forEach(function (b) {
    b.addEventListener("click", function () {
      setView(b.dataset.view);
    });
  });

  function start(eager) {
    // A link may open the page in the test's view (results.html#view=test).
    if (location.hash === "#view=test" && D.hasTestShare) {
      setView("test");
    } else {
      drawTables("system");
    }
    document.querySelectorAll("div.counters[data-test]").forEach(function (host) {
      var c = D.counters(Number(host.dataset.test));
      if (c) {
        drawCounters(host, c);
      }
    });
    // Flame graphs are drawn when they come near the screen (or at once for the self-test).
    if (eager || !("IntersectionObserver" in window)) {
      flames.forEach(drawFlame);
    } else {
      var seen = new IntersectionObserver(function (entries) {
        entries.forEach(function (e) {
          if (e.isIntersecting) {
            seen.unobserve(e.target);
            drawFlame(e.target);
          }
        });
      }, { rootMargin: "400px" });
      flames.forEach(function (f) {
        seen.observe(f);
      });
    }
    document.body.dataset.readyMs = Math.round(performance.now());
  }

  start(location.hash === "#selftest");
  return { tables: tables, flames: flames, showShape: showShape, setView: setView };
})();
