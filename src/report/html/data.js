// The one module that knows the names of the comparison's fields (the JSON block
// #upcmp-data, written by src/report/html.rs). A field added to the comparison is
// shown by the other scripts after a change here, or with no change at all: function
// fields that COLUMNS does not name become columns titled by their key.
window.upcmp = window.upcmp || {};
window.upcmp.data = (function () {
  "use strict";
  var raw = JSON.parse(document.getElementById("upcmp-data").textContent);
  if (raw.schema !== 1) {
    throw new Error("this page's data has layout " + raw.schema + ", its script reads layout 1");
  }
  var tests = raw.comparison.tests;

  function fixed(digits) {
    return function (v) {
      if (v === null || v === undefined) {
        return "";
      }
      var s = v.toFixed(digits);
      // -0.000 reads as a change that is not there, as in the text report.
      return /^-0\.?0*$/.test(s) ? s.slice(1) : s;
    };
  }
  function pValue(v) {
    if (v === null || v === undefined) {
      return "";
    }
    return v === 0 || v >= 0.001 ? v.toFixed(3) : v.toExponential(1);
  }
  function generic(v) {
    if (v === null || v === undefined) {
      return "";
    }
    if (typeof v === "number") {
      return String(Number(v.toPrecision(6)));
    }
    return typeof v === "object" ? JSON.stringify(v) : String(v);
  }
  function verdict(v) {
    return typeof v === "string" ? v : "";
  }

  // The function table's columns, in order. kind: "name" (the filter searches it),
  // "verdict" or "bar" (drawn as a bar against the largest value of the table);
  // repeated: only when a side has repetitions; hidden: never a column.
  var COLUMNS = [
    { key: "function", label: "Function", kind: "name", format: generic },
    { key: "run1", label: "Run1", valued: true },
    { key: "run1_sd_pct", label: "sd%", format: fixed(1), repeated: true },
    { key: "run2", label: "Run2", valued: true },
    { key: "run2_sd_pct", label: "sd%", format: fixed(1), repeated: true },
    { key: "delta", label: "R2-R1", valued: true },
    { key: "delta_pct_of_run1_cpu", label: "R2-R1/total R1 CPU (%)", kind: "bar", format: fixed(2) },
    { key: "run1_pct_of_cpu", label: "Run1 % of CPU", format: fixed(2) },
    { key: "run2_pct_of_cpu", label: "Run2 % of CPU", format: fixed(2) },
    { key: "noise.ci95", label: "±95%", valued: true },
    { key: "noise.p_value", label: "p", format: pValue },
    { key: "noise.verdict", label: "95% test", kind: "verdict", format: verdict },
    { key: "noise.significant", hidden: true },
    { key: "noise.method", hidden: true },
    { key: "noise.delta", hidden: true },
    { key: "listed", hidden: true }
  ];

  // Test i's function rows: null for a test present in one run only. view "test": the
  // test's processes' samples alone (test_share), when the page has them.
  function functionTable(i, view) {
    var share = view === "test" ? raw.test_share : null;
    var t = share ? share.function_rows[i] : raw.function_rows[i];
    var outcome = tests[i].outcome;
    if (!t || outcome.outcome !== "compared") {
      return null;
    }
    var profile = share ? share.profiles[i] : outcome.profile;
    if (!profile) {
      return null;
    }
    var at = {};
    t.keys.forEach(function (k, j) {
      at[k] = j;
    });
    function value(r, key) {
      var j = at[key];
      var v = j === undefined ? undefined : t.rows[r][j];
      return v === undefined ? null : v;
    }
    var repeated = profile.run1.repetitions > 1 || profile.run2.repetitions > 1;
    // Values are in the comparison's measure: seconds, or an event's count printed
    // scaled (Mcycles), or each run's % of its total.
    var measure = profile.measure || { unit: "sec", scale: 1 };
    var columns = COLUMNS.filter(function (c) {
      return !c.hidden && at[c.key] !== undefined && (!c.repeated || repeated);
    }).map(function (c) {
      if (!c.valued) {
        return c;
      }
      var three = fixed(3);
      return {
        key: c.key,
        label: c.label + " (" + measure.unit + ")",
        format: function (v) {
          return v === null || v === undefined ? "" : three(v / measure.scale);
        }
      };
    });
    t.keys.forEach(function (k) {
      var known = COLUMNS.some(function (c) {
        return c.key === k;
      });
      if (!known) {
        columns.push({ key: k, label: k, format: generic });
      }
    });
    return {
      length: t.rows.length,
      columns: columns,
      cutoffPct: profile.cutoff_pct,
      value: value,
      name: function (r) {
        return String(value(r, "function"));
      },
      // What a row without a symbol is (an `[unknown]` row), or "".
      hint: function (r) {
        var h = raw.hints && raw.hints[String(value(r, "function"))];
        return typeof h === "string" ? h : "";
      },
      significant: function (r) {
        // Beyond the noise as far as it was measured (single runs: the sampling error).
        var v = value(r, "noise.verdict");
        return v === "significant" || v === "sampling only";
      },
      // The text report's rule: at or above the cutoff in either run.
      aboveCutoff: function (r) {
        return Math.max(value(r, "run1_pct_of_cpu") || 0, value(r, "run2_pct_of_cpu") || 0) >= profile.cutoff_pct;
      }
    };
  }

  // A count with three significant digits, as the text report prints it (fmt_count).
  function count(x) {
    if (x === null || x === undefined) {
      return "absent";
    }
    if (typeof x !== "number") {
      return String(x);
    }
    if (x === 0 || !isFinite(x)) {
      return String(x);
    }
    var a = Math.abs(x);
    if (a >= 1e9) {
      return x.toExponential(3).replace("e+", "e");
    }
    return x.toFixed(Math.max(0, 2 - Math.floor(Math.log10(a))));
  }

  // Counters of test i (System Activity), when the comparison carries them: the rows
  // the text report lists (listed is not false), laid out as its table (counter, the
  // tested value and the value per second on each side, change, verdict); every other
  // plain field of a row is its tooltip (nested objects such as the test's statistics
  // stay in results.json). Or null.
  var COUNTER_COLUMNS = ["counter", "Run1", "Run2", "change", "Run1/s", "Run2/s", "95% test"];
  var COUNTER_SHOWN = ["name", "basis", "run1", "run2", "change", "per_sec1", "per_sec2", "verdict", "listed"];
  function counters(i) {
    var list = tests[i].outcome.counters;
    if (!Array.isArray(list)) {
      return null;
    }
    list = list.filter(function (c) {
      return c.listed !== false;
    });
    if (list.length === 0) {
      return null;
    }
    return {
      columns: COUNTER_COLUMNS,
      rows: list.map(function (c) {
        var change = typeof c.change === "number" ? (c.change >= 0 ? "+" : "") + c.change.toFixed(1) + "%" : "-";
        return [
          generic(c.name) + (c.basis === "per_operation" ? "/op" : ""),
          count(c.run1),
          count(c.run2),
          change,
          count(c.per_sec1),
          count(c.per_sec2),
          verdict(c.verdict)
        ];
      }),
      tips: list.map(function (c) {
        return Object.keys(c)
          .filter(function (k) {
            return COUNTER_SHOWN.indexOf(k) < 0 && (c[k] === null || typeof c[k] !== "object");
          })
          .map(function (k) {
            return k + ": " + generic(c[k]);
          })
          .join("\n");
      })
    };
  }

  // The SVG text of flame graph `id` (its own JSON block, parsed only when drawn).
  function flameSvg(id) {
    return JSON.parse(document.getElementById(id).textContent);
  }

  return {
    hideNoise: raw.hide_noise === true,
    hasTestShare: !!raw.test_share,
    testCount: tests.length,
    testName: function (i) {
      return tests[i].name;
    },
    functionTable: functionTable,
    counters: counters,
    flameSvg: flameSvg
  };
})();
