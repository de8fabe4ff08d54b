import { inlineStyle } from "../inline-style.ts";

/** The console's one stylesheet, inline; the CSP allows exactly this text by its hash. */
export const CONSOLE_STYLE = inlineStyle(`
*,
*::before,
*::after {
  box-sizing: border-box;
}
body {
  font:
    15px/1.5 system-ui,
    sans-serif;
  max-width: 72rem;
  margin: 0 auto;
  padding: 0 1rem 2rem;
  color: #1b1b1b;
  background: #fff;
}
a {
  color: #0b57a4;
}
:focus-visible {
  outline: 3px solid #0b57a4;
  outline-offset: 2px;
}
.skip {
  position: absolute;
  left: -999px;
}
.skip:focus {
  left: 1rem;
  top: 0.5rem;
  background: #fff;
  padding: 0.3rem;
}
header.top {
  display: flex;
  flex-wrap: wrap;
  gap: 0.5rem 1.5rem;
  align-items: center;
  justify-content: space-between;
  border-bottom: 1px solid #ddd;
  padding: 0.8rem 0;
}
header.top nav {
  display: flex;
  flex-wrap: wrap;
  gap: 0.3rem 1rem;
  align-items: center;
}
.brand {
  font-weight: 700;
  font-size: 1.15rem;
  text-decoration: none;
  color: #1b1b1b;
}
h1 {
  font-size: 1.4rem;
  margin: 1rem 0 0.5rem;
  overflow-wrap: anywhere;
}
h2 {
  font-size: 1.15rem;
  margin: 1.5rem 0 0.5rem;
}
table {
  border-collapse: collapse;
  width: 100%;
}
td,
th {
  border-bottom: 1px solid #ddd;
  padding: 0.35rem 0.5rem;
  text-align: left;
  vertical-align: top;
}
code,
pre {
  font:
    13px/1.4 ui-monospace,
    monospace;
  overflow-wrap: anywhere;
}
pre {
  background: #f4f4f4;
  padding: 0.6rem;
  white-space: pre-wrap;
  word-break: break-all;
}
.notice {
  background: #eef6ee;
  border: 1px solid #7a7;
  padding: 0.5rem 0.7rem;
}
.warning {
  background: #fff6e0;
  border: 1px solid #c90;
  padding: 0.5rem 0.7rem;
}
.warning h2 {
  margin-top: 0.2rem;
}
.badge {
  display: inline-block;
  font-size: 0.8rem;
  font-weight: 600;
  color: #5c4700;
  background: #fff6e0;
  border: 1px solid #c90;
  border-radius: 0.6rem;
  padding: 0 0.45rem;
  white-space: nowrap;
}
.secret {
  font-size: 1rem;
  background: #fff6e0;
  padding: 0.5rem;
  display: block;
}
.status-success,
.status-active,
.verdict-healthy {
  color: #1e5b1e;
}
.status-pending,
.status-error,
.status-paused,
.verdict-degraded,
.verdict-idle {
  color: #6e5600;
}
.status-exhausted,
.status-disabled,
.verdict-failing {
  color: #a12a2a;
  font-weight: 700;
}
form.inline {
  display: inline;
}
.actions {
  display: flex;
  flex-wrap: wrap;
  gap: 0.5rem;
  align-items: center;
  margin: 0.7rem 0;
}
.filters {
  display: flex;
  flex-wrap: wrap;
  gap: 0.5rem 1rem;
  align-items: end;
  margin: 0.7rem 0;
}
.filters label,
.field {
  display: flex;
  flex-direction: column;
  font-size: 0.9rem;
  max-width: 100%;
}
.field {
  margin: 0.6rem 0;
}
input,
select,
textarea,
button {
  font: inherit;
  max-width: 100%;
}
input[type="text"],
input[type="url"],
textarea {
  width: 40rem;
}
fieldset {
  border: 1px solid #ccc;
  max-width: 100%;
}
button {
  padding: 0.25rem 0.7rem;
  cursor: pointer;
}
button.danger {
  color: #fff;
  background: #a12a2a;
  border: 1px solid #7a1f1f;
}
dl.facts {
  display: grid;
  grid-template-columns: max-content 1fr;
  gap: 0.2rem 1rem;
}
dl.facts dt {
  font-weight: 600;
}
dl.facts dd {
  margin: 0;
  overflow-wrap: anywhere;
}
.attempt {
  border: 1px solid #ddd;
  padding: 0.5rem 0.8rem;
  margin: 0.8rem 0;
}
@media (max-width: 640px) {
  table,
  tbody,
  tr,
  td {
    display: block;
    width: 100%;
  }
  thead,
  tr.head {
    position: absolute;
    left: -9999px;
  }
  tr {
    border-bottom: 2px solid #ccc;
    padding: 0.3rem 0;
  }
  td {
    border: 0;
    padding: 0.15rem 0;
  }
  td[data-label]::before {
    content: attr(data-label) ": ";
    font-weight: 600;
  }
  dl.facts {
    grid-template-columns: 1fr;
  }
  dl.facts dd {
    margin-bottom: 0.4rem;
  }
}
.charts {
  display: flex;
  flex-wrap: wrap;
  gap: 0 2rem;
}
figure.chart {
  margin: 0 0 1rem;
  width: 100%;
  max-width: 30rem;
}
svg.chart {
  display: block;
  width: 100%;
  height: auto;
}
figure.chart figcaption {
  font-size: 0.9rem;
}
.key {
  white-space: nowrap;
  margin-right: 0.8rem;
}
.swatch {
  display: inline-block;
  width: 0.8rem;
  height: 0.8rem;
  margin-right: 0.3rem;
  vertical-align: -0.1rem;
}
.swatch.succeeded {
  background: #1a7f37;
}
.swatch.failed {
  background: #c62828;
}
.swatch.p50 {
  background: #0b57a4;
}
.swatch.p95 {
  background: #7b3fb0;
}
`);
