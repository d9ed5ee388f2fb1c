// Draws the report's Plotly charts. Each chart is a <div> and, beside it, its figure as a
// JSON data block (<script type="application/json" data-chart="DIV-ID">), which the
// browser never runs: no page of the report has an inline script, so its
// content-security policy allows scripts from the report's own files only.
"use strict";
(function () {
  for (const block of document.querySelectorAll('script[type="application/json"][data-chart]')) {
    const figure = JSON.parse(block.textContent);
    const config = Object.assign({ displaylogo: false, responsive: true }, figure.config || {});
    Plotly.newPlot(block.dataset.chart, figure.data, figure.layout, config);
  }
})();
