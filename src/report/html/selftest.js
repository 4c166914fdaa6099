// Opened as results.html#selftest, the page uses itself as a reader would (scrolls each
// function table through, shows the rows below the cutoff, hides the noise, sorts,
// filters, searches and zooms each flame graph) and writes what its DOM showed at each
// step as JSON into <pre id="upcmp-selftest">. tests/html.rs reads that from
// chromium --dump-dom and checks it against results.csv; this script judges nothing.
// As results.html#timing it writes how long each table took to show every row, sort,
// filter and scroll into <pre id="upcmp-timing"> (benches/html_open.sh).
(function () {
  "use strict";
  var P = window.upcmp.page;

  function write(id, report) {
    var pre = document.createElement("pre");
    pre.id = id;
    pre.hidden = true;
    pre.textContent = JSON.stringify(report);
    document.body.appendChild(pre);
  }

  // Milliseconds of `step`, layout of the table included.
  function timed(ft, step) {
    var t0 = performance.now();
    step();
    ft.scroller.getBoundingClientRect();
    ft.body.offsetHeight;
    return Math.round(performance.now() - t0);
  }

  if (location.hash === "#timing") {
    window.addEventListener("load", function () {
      write("upcmp-timing", {
        ready_ms: Number(document.body.dataset.readyMs),
        tables: P.tables.map(function (ft) {
          return {
            rows: ft.t.length,
            show_all_ms: timed(ft, function () {
              ft.below.click();
            }),
            sort_ms: timed(ft, function () {
              ft.headers[1].click();
            }),
            scroll_ms: timed(ft, function () {
              ft.scroller.scrollTop = ft.scroller.scrollHeight / 2;
              ft.render();
            }),
            filter_ms: timed(ft, function () {
              ft.filter.value = "9";
              ft.filter.dispatchEvent(new Event("input"));
            }),
            shown: ft.order.length
          };
        })
      });
    });
    return;
  }
  if (location.hash !== "#selftest") {
    return;
  }
  var MAX_ROWS = 5000; // rows read per view

  function cells(tr) {
    return Array.prototype.map.call(tr.cells, function (td) {
      return td.textContent;
    });
  }

  // Every row of the table's current view, read from its DOM a half screen at a time.
  function readAll(ft) {
    var rows = [];
    ft.scroller.scrollTop = 0;
    for (;;) {
      ft.render();
      ft.body.querySelectorAll("tr[data-pos]").forEach(function (tr) {
        rows[Number(tr.dataset.pos)] = cells(tr);
      });
      var before = ft.scroller.scrollTop;
      ft.scroller.scrollTop = before + Math.max(1, Math.floor(ft.scroller.clientHeight / 2));
      if (ft.scroller.scrollTop <= before || rows.length >= MAX_ROWS) {
        break;
      }
    }
    ft.scroller.scrollTop = 0;
    ft.render();
    return rows;
  }

  function tableReport(ft) {
    var out = {
      columns: ft.headers.map(function (th) {
        return th.textContent;
      }),
      total: ft.t.length
    };
    out.shown = readAll(ft);
    // Scrolled fully left and fully right: are the verdict and the name still in view?
    var box = ft.scroller.getBoundingClientRect();
    var vcol = ft.headers.filter(function (th) {
      return th.classList.contains("vcol");
    })[0];
    out.overflows = ft.scroller.scrollWidth > ft.scroller.clientWidth;
    ft.scroller.scrollLeft = 0;
    out.verdict_in_view = vcol ? vcol.getBoundingClientRect().right <= box.right + 1 : false;
    ft.scroller.scrollLeft = ft.scroller.scrollWidth;
    out.name_in_view = ft.headers[0].getBoundingClientRect().left >= box.left - 1;
    ft.scroller.scrollLeft = 0;
    ft.below.click();
    out.with_below = readAll(ft);
    // The tooltips of the names drawn (the first screenful).
    out.name_titles = Array.prototype.map.call(ft.body.querySelectorAll("td.name"), function (td) {
      return td.title;
    });
    ft.noise.click();
    out.noise_toggled = readAll(ft);
    ft.noise.click();
    ft.headers[1].click();
    out.sorted_column = ft.headers[1].textContent;
    out.sorted = readAll(ft);
    ft.headers[1].click();
    out.sorted_again = readAll(ft);
    var last = out.with_below[out.with_below.length - 1];
    out.filter = last ? last[0] : "";
    ft.filter.value = out.filter;
    ft.filter.dispatchEvent(new Event("input"));
    out.filtered = readAll(ft);
    out.count_text = ft.count.textContent;
    return out;
  }

  function flameReport(host) {
    var out = { id: host.dataset.svg, loaded: host.dataset.loaded === "yes" };
    var frame = host.querySelector("iframe");
    var doc = frame && frame.contentDocument;
    if (!doc || !doc.getElementById("frames")) {
      return out;
    }
    var win = frame.contentWindow;
    var groups = Array.prototype.slice.call(doc.querySelectorAll("#frames > g"));
    var title = function (g) {
      return g.querySelector("title").textContent;
    };
    out.height = frame.offsetHeight;
    out.titles = groups.map(title);
    // What each frame reads as, beside its title: [title, label].
    out.labels = groups.map(function (g) {
      var t = g.querySelector("text");
      return [title(g), t ? t.textContent : ""];
    });
    win.search(".");
    out.search_matched = doc.getElementById("matched").textContent;
    win.reset_search();
    // Zoom into the narrowest frame that is not the root.
    var width = function (g) {
      return Number(g.querySelector("rect").getAttribute("fg:w"));
    };
    var root = Math.max.apply(null, groups.map(width));
    var target = groups.filter(function (g) {
      return width(g) < root;
    }).sort(function (a, b) {
      return width(a) - width(b);
    })[0];
    if (target) {
      target.dispatchEvent(new MouseEvent("click", { bubbles: true }));
      out.zoomed_to = title(target);
      out.zoomed = !doc.getElementById("unzoom").classList.contains("hide");
      out.hidden_after_zoom = doc.querySelectorAll("#frames > g.hide").length;
      // Each graph is a document of its own: zooming this one leaves the others whole.
      out.others_zoomed = P.flames.filter(function (f) {
        var other = f !== host && f.querySelector("iframe");
        return other && !other.contentDocument.getElementById("unzoom").classList.contains("hide");
      }).length;
      doc.getElementById("unzoom").dispatchEvent(new MouseEvent("click", { bubbles: true }));
      out.unzoomed = doc.getElementById("unzoom").classList.contains("hide");
    }
    return out;
  }

  // An annotated function's row as a reader opens it: closed at first, then its summary
  // clicked; the text it shows then (innerText: only what is rendered), its highlighted
  // lines and its line table's cells.
  function annotationReport(d) {
    var out = { function: d.dataset.function, open_at_first: d.open, text_closed: d.innerText };
    d.querySelector("summary").click();
    out.open = d.open;
    out.text = d.innerText;
    out.hot = Array.prototype.map.call(d.querySelectorAll("table.annotate-lines tr.hot"), cells);
    out.lines = Array.prototype.map.call(d.querySelectorAll("table.annotate-lines tbody tr"), cells);
    out.lines_height = (d.querySelector("table.annotate-lines") || { offsetHeight: 0 }).offsetHeight;
    return out;
  }

  // A table's function names that open an annotation, and what clicking the first one
  // opened (closed again after, for annotationReport).
  function linkReport(ft) {
    ft.filter.value = "";
    ft.filter.dispatchEvent(new Event("input"));
    var linked = ft.body.querySelectorAll("td.annotated");
    var out = { names: Array.prototype.map.call(linked, function (td) {
      return td.textContent;
    }) };
    if (linked.length > 0) {
      linked[0].click();
      var open = document.querySelectorAll("details.annotate[open]");
      out.opened = Array.prototype.map.call(open, function (d) {
        return d.dataset.function;
      });
      out.opened_text = open.length ? open[0].innerText : "";
      Array.prototype.forEach.call(open, function (d) {
        d.open = false;
      });
    }
    return out;
  }

  function finish() {
    var report = {
      ready_ms: Number(document.body.dataset.readyMs),
      digest_links: Array.prototype.map.call(document.querySelectorAll("#digest a[href^='#']"), function (a) {
        return [a.textContent, a.getAttribute("href"), document.getElementById(a.getAttribute("href").slice(1)) !== null];
      }),
      tables: P.tables.map(tableReport),
      counters: Array.prototype.map.call(document.querySelectorAll("table.counters"), function (t) {
        return Array.prototype.map.call(t.rows, cells);
      }),
      counter_tips: Array.prototype.map.call(document.querySelectorAll("table.counters"), function (t) {
        return Array.prototype.map.call(t.tBodies[0].rows, function (tr) {
          return tr.title;
        });
      }),
      flames: P.flames.map(flameReport),
      annotation_links: P.tables.map(linkReport),
      annotations: Array.prototype.map.call(document.querySelectorAll("details.annotate"), annotationReport)
    };
    // Then each graph with two shapes in run 1's, as its button shows it.
    var shaped = P.flames.filter(function (f) {
      return f.dataset.svg1;
    });
    shaped.forEach(function (f) {
      f.previousElementSibling.querySelector("button.shape[data-side='1']").click();
    });
    whenLoaded(function () {
      report.flames_run1 = shaped.map(function (f) {
        var out = flameReport(f);
        out.side = f.dataset.side;
        out.pressed = f.previousElementSibling.querySelector("button[aria-pressed='true']").textContent;
        return out;
      });
      // Then, where the page has the test's share, each view as its button shows it:
      // the rendered text of every test's section and every row of its table.
      if (document.querySelector("button.view")) {
        report.views = ["test", "system"].map(function (v) {
          document.querySelector("button.view[data-view='" + v + "']").click();
          return {
            view: document.body.dataset.view,
            pressed: document.querySelector("button.view[aria-pressed='true']").textContent,
            text: Array.prototype.map.call(document.querySelectorAll("section.test"), function (s) {
              return s.innerText;
            }),
            tables: P.tables.map(function (ft) {
              ft.below.click();
              return readAll(ft);
            })
          };
        });
      }
      report.errors = window.upcmpErrors.slice();
      write("upcmp-selftest", report);
    });
  }

  // Waits for the flame graphs (and inferno's own start-up timer) before reading.
  function whenLoaded(then) {
    var waited = 0;
    (function wait() {
      var pending = P.flames.some(function (f) {
        return f.dataset.loaded !== "yes";
      });
      if (pending && waited < 10000) {
        waited += 50;
        window.setTimeout(wait, 50);
      } else {
        window.setTimeout(then, 100);
      }
    })();
  }
  window.addEventListener("load", function () {
    whenLoaded(finish);
  });
})();
