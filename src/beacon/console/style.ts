/** The console's style sheet, served as /console/console.css (the CSP allows style from our own origin only). */
export const CONSOLE_CSS = `
:root { color-scheme: light; --ink: #1d232a; --muted: #5b6570; --line: #d9dee3; --accent: #0072B2; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: #f6f7f9; }
header { display: flex; align-items: center; gap: 24px; padding: 10px 24px; background: #1d232a; color: #fff; }
header .brand { font-weight: 600; letter-spacing: .02em; }
header nav { display: flex; align-items: center; gap: 16px; flex: 1; }
header nav a { color: #fff; text-decoration: none; }
header nav a:hover { text-decoration: underline; }
header .who { margin-left: auto; color: #c5ccd3; font-size: 12px; }
main { max-width: 1080px; margin: 0 auto; padding: 8px 24px 40px; }
h1 { font-size: 22px; margin: 16px 0 8px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 4px 16px 12px; margin: 12px 0; }
table { border-collapse: collapse; width: 100%; }
caption { text-align: left; color: var(--muted); font-size: 12px; padding: 4px 0; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; font-size: 12px; color: var(--muted); }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
a { color: var(--accent); }
code { font-size: 12px; }
td time { white-space: nowrap; }
.empty, .hint, .none { color: var(--muted); }
.problem { color: #a40000; font-weight: 600; }
.state { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px; border: 1px solid; }
.state-active { color: #006b45; border-color: #009E73; background: #e9f7f1; }
.state-expiring { color: #7a4a00; border-color: #E69F00; background: #fdf4e3; }
.state-expired, .state-revoked { color: #8b1a00; border-color: #D55E00; background: #fbece6; }
.state-silent { color: #5b6570; border-color: #9aa3ab; background: #f0f2f4; }
dl.counts, dl.facts { display: flex; flex-wrap: wrap; gap: 12px 32px; margin: 8px 0; }
dl.counts dt, dl.facts dt { color: var(--muted); font-size: 12px; }
dl.counts dd { margin: 0; font-size: 28px; font-weight: 600; }
dl.facts dd { margin: 0; }
figure.chart { margin: 0; }
figure.chart svg { max-width: 100%; height: auto; }
ul.legend { list-style: none; display: flex; flex-wrap: wrap; gap: 4px 16px; padding: 0; margin: 4px 0 0 64px; }
ul.legend svg { vertical-align: -1px; }
form.inline { display: inline; }
form.action { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 16px; margin: 8px 0; }
button.danger { background: #b42318; border-color: #b42318; }
form.login { display: flex; flex-direction: column; gap: 8px; max-width: 360px; }
input, button { font: inherit; padding: 6px 10px; border-radius: 4px; border: 1px solid var(--line); }
button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
header button { background: transparent; border-color: #5b6570; color: #fff; padding: 2px 10px; }
`;
