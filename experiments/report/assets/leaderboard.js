// The leaderboard of udora's HTML report (docs/running.md, "The HTML report").
// The page embeds, per config, its mean over seeds on every preset (#leaderboard-data).
// A row shows the mean over the presets the filters keep; configs are never averaged
// together. Clicking a header sorts by it (best first, or A to Z; a second click reverses);
// configs without a value sort last either way.
"use strict";

(function () {
  const data = JSON.parse(document.getElementById("leaderboard-data").textContent);
  const table = document.getElementById("leaderboard");
  const body = table.querySelector("tbody");
  const suiteSelect = document.getElementById("filter-suite");
  const presetSelect = document.getElementById("filter-preset");
  const refBox = document.getElementById("filter-references");
  const note = document.getElementById("leaderboard-note");
  let sortKey = data.default_sort;
  let bestFirst = true;

  function keptPresets() {
    const suite = suiteSelect.value;
    const preset = presetSelect.value;
    return data.presets
      .filter((p) => (suite === "" || p.suite === suite) && (preset === "" || p.name === preset))
      .map((p) => p.name);
  }

  function meanOver(row, key, presets) {
    let total = 0;
    let count = 0;
    for (const p of presets) {
      const v = row.values[p] === undefined ? null : row.values[p][key];
      if (v !== null && v !== undefined && Number.isFinite(v)) {
        total += v;
        count += 1;
      }
    }
    return count === 0 ? null : total / count;
  }

  function rowsFor(presets) {
    const out = [];
    for (const row of data.rows) {
      if (!refBox.checked && row.reference) continue;
      const covered = presets.filter((p) => row.values[p] !== undefined);
      if (covered.length === 0) continue;
      let runs = 0;
      let failed = 0;
      for (const p of presets) {
        const c = row.counts[p];
        if (c !== undefined) {
          runs += c[0];
          failed += c[1];
        }
      }
      const shown = { row: row, presets: covered.length, runs: runs, failed: failed, cells: {} };
      for (const col of data.columns) {
        // NLL and CRPS are in each preset's target units: shown for one preset only
        const mixed = col.per_preset && covered.length > 1;
        shown.cells[col.key] = mixed ? null : meanOver(row, col.key, covered);
      }
      out.push(shown);
    }
    return out;
  }

  function compare(a, b) {
    const col = data.columns.find((c) => c.key === sortKey) || { better: "higher" };
    const x = sortKey === "config" ? a.row.config : a.cells[sortKey];
    const y = sortKey === "config" ? b.row.config : b.cells[sortKey];
    if (x === null && y === null) return a.row.config.localeCompare(b.row.config);
    if (x === null) return 1;
    if (y === null) return -1;
    if (sortKey === "config") return bestFirst ? x.localeCompare(y) : y.localeCompare(x);
    const best = col.better === "lower" ? x - y : y - x;  // best first
    if (best !== 0) return bestFirst ? best : -best;
    return a.row.config.localeCompare(b.row.config);
  }

  function cell(text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  }

  function render() {
    const presets = keptPresets();
    const rows = rowsFor(presets).sort(compare);
    body.replaceChildren();
    for (const r of rows) {
      const tr = document.createElement("tr");
      tr.dataset.config = r.row.config;
      if (r.row.reference) tr.className = "reference";
      const name = document.createElement("td");
      const link = document.createElement("a");
      link.href = r.row.page;
      link.textContent = r.row.config;
      name.appendChild(link);
      if (r.row.rank && r.row.rank.tied_best) {
        // over every preset, whatever the filters keep (rankings.html)
        const mark = document.createElement("span");
        mark.className = "tied-best";
        mark.textContent = " ≈ best";
        mark.title = "not significantly different from the best by EU Spearman rank over all " +
          r.row.rank.presets + " presets (Friedman and Nemenyi, or Wilcoxon for two configs)";
        name.appendChild(mark);
      }
      tr.appendChild(name);
      tr.appendChild(cell(r.row.family, "family"));
      for (const col of data.columns) {
        const v = r.cells[col.key];
        const blank = col.per_preset && presets.length > 1 ? "–" : "n/a";
        const td = cell(v === null ? blank : v.toFixed(col.digits), "num");
        td.dataset.key = col.key;
        td.dataset.value = v === null ? "" : String(v);
        tr.appendChild(td);
      }
      tr.appendChild(cell(String(r.presets), "num"));
      const runs = cell(String(r.runs) + (r.failed ? " (" + r.failed + " failed)" : ""), "num");
      runs.dataset.key = "runs";
      runs.dataset.value = String(r.runs);
      tr.appendChild(runs);
      body.appendChild(tr);
    }
    for (const th of table.querySelectorAll("th[data-key]")) {
      // aria-sort names the order of the values: best first is descending for a score
      // where higher is better, ascending for a loss and for names (A to Z).
      const higher = th.dataset.better === "higher";
      const order = bestFirst === higher ? "descending" : "ascending";
      th.setAttribute("aria-sort", th.dataset.key === sortKey ? order : "none");
    }
    note.textContent =
      rows.length + " configs; means over " + presets.length + " preset" +
      (presets.length === 1 ? "" : "s") + " (" + presets.join(", ") + ") of per-preset seed means." +
      (presets.length > 1 ? " NLL and CRPS are in each preset's target units: choose one preset to see them." : "") +
      (data.rows.some((row) => row.rank) ? " ≈ best: not significantly different from the best by EU Spearman rank over all presets, whatever the filters (Rankings page)." : "");
  }

  for (const th of table.querySelectorAll("th[data-key]")) {
    th.addEventListener("click", () => {
      if (sortKey === th.dataset.key) bestFirst = !bestFirst;
      else {
        sortKey = th.dataset.key;
        bestFirst = true;
      }
      render();
    });
  }
  // The preset list offers the chosen suite's presets only.
  function fillPresets() {
    const suite = suiteSelect.value;
    const options = [new Option("all", "")];
    for (const p of data.presets) {
      if (suite === "" || p.suite === suite) options.push(new Option(p.name, p.name));
    }
    presetSelect.replaceChildren(...options);
    presetSelect.value = "";
  }
  suiteSelect.addEventListener("change", () => {
    fillPresets();
    render();
  });
  presetSelect.addEventListener("change", render);
  refBox.addEventListener("change", render);
  render();
})();
