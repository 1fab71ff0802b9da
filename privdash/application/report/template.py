"""The release report's page: one Jinja2 template and its stylesheet, for the HTML file and the PDF alike.

The page is self-contained: the stylesheet is inline, the charts are inline SVG, the fonts are the reader's own
(DejaVu Sans, which Debian ships, first), and nothing refers to another address. For print (the PDF) the page is
A4 with a running footer (report title, privdash version, page numbers). Sections follow each other without forced
page breaks, so no page is left nearly empty: a heading stays with what follows it, a table row, a chart, a short
table and the sign-off block are never split, and longer tables repeat their header on the next page. The sign-off
block has form fields in the HTML file and lines to write on in the PDF (``pdf`` in the context). The condensed
recipe is a file of the report: a download link (``data:`` address) in the HTML file, an attachment of the PDF.
"""

from __future__ import annotations

__all__ = ["STYLE", "TEMPLATE"]

STYLE = """
@page {
  size: A4;
  margin: 16mm 15mm 18mm 15mm;
  font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif;
  @bottom-left { content: string(report-title); font-size: 7.5pt; color: #5c636a; }
  @bottom-right { content: "privdash " string(report-version) " · page " counter(page) " of " counter(pages);
                  font-size: 7.5pt; color: #5c636a; }
}
:root { --ink: #1f2328; --muted: #5c636a; --line: #d0d7de; --pass: #23782f; --fail: #70002a; --tint: #f6f8fa; }
* { box-sizing: border-box; }
body { font-family: "DejaVu Sans", "Helvetica Neue", Arial, sans-serif; color: var(--ink); font-size: 9.5pt;
       line-height: 1.4; margin: 0 auto; max-width: 190mm; padding: 0 4mm; }
h1 { font-size: 17pt; margin: 0 0 1mm; string-set: report-title content(); }
h2 { font-size: 13pt; margin: 0 0 2mm; padding-bottom: 1mm; border-bottom: 1.5pt solid var(--ink); }
h3 { font-size: 10.5pt; margin: 4mm 0 1.5mm; }
p { margin: 1.5mm 0; }
.subtitle { color: var(--muted); margin-bottom: 4mm; }
.version { string-set: report-version content(); }
section { margin-bottom: 6mm; }
h2, h3, h4 { break-after: avoid; }
.keep, .notice, table.short, table.facts, figure, .signoff-block { break-inside: avoid; }
p { orphans: 3; widows: 3; }
.verdict { border: 1.5pt solid; border-left-width: 6pt; padding: 3mm 4mm; margin: 3mm 0 5mm; border-radius: 2pt; }
.verdict.pass { border-color: var(--pass); background: #eef7ef; }
.verdict.fail { border-color: var(--fail); background: #fbeff2; }
.verdict .status { font-size: 13pt; font-weight: bold; display: block; margin-bottom: 1mm; }
.verdict.pass .status { color: var(--pass); }
.verdict.fail .status { color: var(--fail); }
.notice { border: 1pt dashed var(--muted); padding: 2mm 3mm; background: var(--tint); font-size: 8.5pt; }
.muted, .note { color: var(--muted); }
.note { font-size: 8.5pt; }
table { border-collapse: collapse; width: 100%; margin: 1.5mm 0 3mm; font-size: 8.5pt; }
thead { display: table-header-group; }
tr { break-inside: avoid; }
th, td { border-bottom: 0.6pt solid var(--line); padding: 1.1mm 1.6mm; text-align: left; vertical-align: top; }
th { background: var(--tint); font-weight: bold; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.code, .code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 8pt; word-break: break-all; }
.hash { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 8pt; white-space: nowrap; }
tr.below td { color: var(--fail); }
table.facts th { width: 34%; background: none; font-weight: normal; color: var(--muted); }
table.glance th { background: none; font-weight: normal; color: var(--muted); width: 30%; }
table.glance td { font-weight: bold; width: 20%; }
.badge { display: inline-block; padding: 0.2mm 1.6mm; border-radius: 2pt; font-weight: bold; font-size: 8pt;
         color: #fff; }
.badge.pass { background: var(--pass); }
.badge.fail { background: var(--fail); }
.chart { margin: 2mm 0; break-inside: avoid; }
.chart svg { width: 100%; height: auto; }
.charts { display: flex; gap: 4mm; }
.charts .chart { flex: 1; }
pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 7pt; background: var(--tint);
      padding: 2mm; white-space: pre-wrap; word-break: break-all; border: 0.6pt solid var(--line); }
dl.definitions { columns: 2; column-gap: 6mm; font-size: 8.5pt; }
dl.definitions dt { font-weight: bold; margin-top: 1.5mm; break-after: avoid; }
dl.definitions dd { break-inside: avoid; }
td.wide { min-width: 45%; }
dl.definitions dd { margin: 0 0 0 5mm; }
.signoff td { height: 11mm; vertical-align: bottom; }
.signoff th { width: 22%; vertical-align: bottom; }
.signoff .line { border-bottom: 0.8pt solid var(--ink); height: 8mm; }
.signoff input[type=text], .signoff input[type=date], .signoff textarea {
  width: 100%; font: inherit; padding: 1mm; border: 0.8pt solid var(--muted); border-radius: 2pt; }
.signoff label { margin-right: 5mm; }
.box { display: inline-block; width: 3.2mm; height: 3.2mm; border: 0.8pt solid var(--ink); margin-right: 1mm;
       vertical-align: -0.5mm; }
@media screen { body { padding: 8mm; } section.part { border-top: 1pt solid var(--line); padding-top: 6mm; } }
"""

TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="privdash {{ version }}">
<title>Release report: {{ title }}</title>
<style>{{ style | safe }}</style>
</head>
<body>
<header>
  <h1>Release report: {{ title }}</h1>
  <p class="subtitle">Made {{ fingerprint.created }} with privdash <span class="version">{{ version }}</span></p>
</header>

<div class="verdict {{ verdict.status }}" id="verdict">
  <span class="status">{{ verdict.label }}</span>
  {{ verdict.sentence }}
</div>

<section id="dataset">
  <h2>1. Dataset</h2>
  <table class="facts">
    {% for name, value in fingerprint.rows %}<tr><th>{{ name }}</th>
      <td{% if name.startswith("SHA-256") %} class="hash"{% endif %}>{{ value }}</td></tr>
    {% endfor %}
  </table>
</section>

<section id="targets">
  <h2>2. Targets and verdict</h2>
  {% if people %}<p class="people" id="people-summary"><strong>Counted in people.</strong> {{ people }}</p>{% endif %}
  <p>Targets: <strong>{{ targets }}</strong>. {{ unit | capitalize }} at risk are counted against the risk threshold
     tau = {{ tau }}.</p>
  <table class="short">
    <thead><tr><th>target</th><th class="num">required</th><th class="num">achieved</th><th>status</th>
      <th class="num">{{ unit }} failing</th><th>reason</th></tr></thead>
    <tbody>
    {% for row in checks %}<tr><td>{{ row.target }}</td><td class="num">{{ row.required }}</td>
      <td class="num">{{ row.achieved }}</td>
      <td><span class="badge {{ row.status }}">{{ row.status | upper }}</span></td>
      <td class="num">{{ row.failing }}</td><td>{{ row.reason }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  {% if before_verdict %}<p><strong>Before the fix:</strong> {{ before_verdict }}</p>{% endif %}
  <h3>The released table at a glance</h3>
  <table class="glance short">
    <tbody>{% for row in glance|batch(2) %}<tr>{% for name, value in row %}<th>{{ name }}</th>
      <td class="num">{{ value }}</td>{% endfor %}</tr>{% endfor %}</tbody>
  </table>
  <p class="notice" id="values-notice">{{ notice }}</p>
</section>

<section id="columns" class="part">
  <h2>3. Columns, roles and missing values</h2>
  <table class="short">
    <thead><tr><th>column</th><th>role</th><th>type</th><th>in the released table</th></tr></thead>
    <tbody>
    {% for column in columns %}<tr><td>{{ column.name }}</td><td>{{ column.role }}</td><td>{{ column.type }}</td>
      <td>{{ column.released }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  <h3>Missing-value policy: {{ missing.policy }}</h3>
  <p>Rule: {{ missing.rule }}.</p>
  <p>Effect on this table: {{ missing.effect }}.</p>
  {% for warning in warnings %}<p class="note">Warning: {{ warning }}</p>{% endfor %}
</section>

<section id="classes" class="part">
  <h2>4. Equivalence classes</h2>
  <p>{{ classes.summary }}</p>
  <div class="charts keep">
    <div>
      <table>
        <thead><tr><th>class size</th><th class="num">classes</th><th class="num">{{ unit }}</th>
          <th class="num">share</th></tr></thead>
        <tbody>
        {% for row in classes.sizes %}<tr{% if row.below %} class="below"{% endif %}><td>{{ row.label }}</td>
          <td class="num">{{ row.classes }}</td><td class="num">{{ row.records }}</td>
          <td class="num">{{ row.share }}</td></tr>
        {% endfor %}
        </tbody>
      </table>
      <p class="note">Sizes below the target k = {{ k }} in red.</p>
    </div>
    <div class="chart" role="img" aria-label="Histogram of class sizes">{{ charts.histogram | safe }}</div>
  </div>
  <h3>The smallest classes that may be shown (at least {{ threshold }} {{ unit }})</h3>
  {% if classes.shown_rows %}
  <table>
    <thead><tr>{% for name in classes.shown_columns %}<th>{{ name }}</th>{% endfor %}
      <th class="num">size</th></tr></thead>
    <tbody>
    {% for row in classes.shown_rows %}<tr>{% for value in row.cells %}<td>{{ value }}</td>{% endfor %}
      <td class="num">{{ row.size }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  {% else %}<p>No class has {{ threshold }} {{ unit }} or more.</p>{% endif %}
  <p class="note">{{ classes.withheld }}</p>
</section>

<section id="risk" class="part">
  <h2>5. Re-identification risk</h2>
  {% if people %}<p class="people"><strong>Counted in people.</strong> {{ people }} A person's risk is that of
    their class of people.</p>{% endif %}
  <table>
    <thead><tr><th>attacker</th><th class="num">highest</th><th class="num">average</th><th class="num">lowest</th>
      <th class="num">{{ unit }} at risk (risk &gt; {{ tau }})</th></tr></thead>
    <tbody>
    {% for row in risk.attackers %}<tr><td>{{ row.model }}</td><td class="num">{{ row.highest }}</td>
      <td class="num">{{ row.average }}</td><td class="num">{{ row.lowest }}</td>
      <td class="num">{{ row.at_risk }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  <p>Population: {{ risk.population }}.</p>
  {% if risk.uniqueness %}
  <h3>Population uniques</h3>
  <table>
    <thead><tr><th>estimate</th><th class="num">population uniques</th>
      <th class="num">share of the population</th><th>valid</th></tr></thead>
    <tbody>
    {% for row in risk.uniqueness %}<tr><td>{{ row.name }}</td><td class="num">{{ row.uniques }}</td>
      <td class="num">{{ row.share }}</td><td>{{ row.valid }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  {% else %}<p class="note">Population uniques are estimated when the population size or sampling fraction is
    known; none was given.</p>{% endif %}
  {% if risk.individual %}<p>Individual risk (sdcMicro): {{ risk.individual }}.</p>{% endif %}
  {% if risk.household %}
  <h3 id="household">Household risk</h3>
  <p>Households are given by the column {{ risk.household.column }}. The household risk of a household is the
    probability that at least one of its members is re-identified, the members' re-identifications taken as
    independent; every member's record risk is its household's. Member risk: {{ risk.household.member }}.</p>
  <table>
    <thead><tr><th>household risk</th><th class="num">released table</th>
      {% if risk.household.with_before %}<th class="num">before the fix</th>{% endif %}</tr></thead>
    <tbody>
    {% for row in risk.household.rows %}<tr><td>{{ row.quantity }}</td><td class="num">{{ row.after }}</td>
      {% if risk.household.with_before %}<td class="num">{{ row.before }}</td>{% endif %}</tr>
    {% endfor %}
    </tbody>
  </table>
  {% endif %}
  {% if risk.model_risk %}
  <h3 id="model-risk">Model-based risk</h3>
  <p>Log-linear models of the table of key-variable combinations (sdcMicro modRisk; Skinner and Holmes 1998): risk 1
    is the share of the sample-unique cells estimated to be population-unique, risk 2 the expected share of correct
    matches of the sample uniques, each over the cells with records.</p>
  <table class="short">
    <thead><tr><th>method</th><th>model</th>
      {% if risk.model_risk_before %}<th class="num">risk 1 before the fix</th><th class="num">risk 1 released</th>
      <th class="num">risk 2 before the fix</th><th class="num">risk 2 released</th>
      {% else %}<th class="num">risk 1</th><th class="num">risk 2</th>{% endif %}</tr></thead>
    <tbody>
    {% for row in risk.model_risk %}<tr><td>{{ row.method }}</td><td>{{ row.model }}</td>
      {% if risk.model_risk_before %}<td class="num">{{ row.risk1_before }}</td><td class="num">{{ row.risk1 }}</td>
      <td class="num">{{ row.risk2_before }}</td><td class="num">{{ row.risk2 }}</td>
      {% else %}<td class="num">{{ row.risk1 }}</td><td class="num">{{ row.risk2 }}</td>{% endif %}</tr>
    {% endfor %}
    </tbody>
  </table>
  {% if risk.model_risk_before %}<p class="note">Before the fix: the models fitted to the input; released: fitted to
    the released table.</p>{% endif %}
  {% endif %}
  <div class="keep">
  <h3>{{ unit | capitalize }} at risk against the risk threshold</h3>
  <div class="chart" role="img" aria-label="{{ unit | capitalize }} at risk against the risk threshold">
    {{ charts.curve | safe }}</div>
  <table class="short">
    <thead><tr><th>k</th>{% for row in risk.below_k %}<th class="num">{{ row.k }}</th>{% endfor %}</tr></thead>
    <tbody><tr><td>{{ unit }} below k</td>
      {% for row in risk.below_k %}<td class="num">{{ row.records }}</td>{% endfor %}</tr>
    <tr><td>share</td>{% for row in risk.below_k %}<td class="num">{{ row.share }}</td>{% endfor %}</tr></tbody>
  </table>
  </div>
  {% for note in left_out %}<p class="note left-out">{{ note }}</p>{% endfor %}
</section>

<section id="models" class="part">
  <h2>6. Privacy models per sensitive attribute</h2>
  {% for attribute in models %}
  <div class="keep">
  <h3>{{ attribute.name }}</h3>
  <table>
    <thead><tr><th>model</th><th class="num">dataset value</th><th>target</th></tr></thead>
    <tbody>
    {% for row in attribute.rows %}<tr><td>{{ row.model }}</td><td class="num">{{ row.value }}</td>
      <td>{{ row.target }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  </div>
  {% else %}<p>No sensitive attribute was chosen: the attribute-disclosure models (l-diversity, t-closeness and the
    others) were not measured.</p>{% endfor %}
</section>

<section id="combinations" class="part">
  <h2>7. Which combinations of quasi-identifiers single people out</h2>
  {% if combinations %}
  <p>{{ combinations.summary }}</p>
  <div class="charts keep">
    <div>
      <table>
        <thead><tr><th>quasi-identifier left out</th><th class="num">fewer unique records</th>
          <th class="num">share</th></tr></thead>
        <tbody>
        {% for row in combinations.contributions %}<tr><td>{{ row.name }}</td><td class="num">{{ row.drop }}</td>
          <td class="num">{{ row.share }}</td></tr>
        {% endfor %}
        </tbody>
      </table>
    </div>
    <div class="chart" role="img" aria-label="Unique records lost when one quasi-identifier is left out">
      {{ charts.contributions | safe }}</div>
  </div>
  <h3>Records by the size of their smallest unique combination</h3>
  <table class="short">
    <thead><tr><th>QIs in the smallest combination</th>
      {% for row in combinations.msu_sizes %}<th class="num">{{ row.size }}</th>{% endfor %}</tr></thead>
    <tbody><tr><td>records</td>
      {% for row in combinations.msu_sizes %}<td class="num">{{ row.records }}</td>{% endfor %}</tr></tbody>
  </table>
  <h3>Combinations with the most unique records</h3>
  <table>
    <thead><tr><th>quasi-identifiers</th><th class="num">unique records</th>
      <th class="num">records in classes &lt; {{ k }}</th><th class="num">k</th><th class="num">classes</th>
      <th class="num">distinction</th><th class="num">separation</th></tr></thead>
    <tbody>
    {% for row in combinations.top %}<tr><td class="wide">{{ row.qis }}</td><td class="num">{{ row.uniques }}</td>
      <td class="num">{{ row.below }}</td>
      <td class="num">{{ row.k }}</td><td class="num">{{ row.classes }}</td><td class="num">{{ row.distinction }}</td>
      <td class="num">{{ row.separation }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  {% if combinations.note %}<p class="note">{{ combinations.note }}</p>{% endif %}
  {% else %}<p>{{ combinations_note }}</p>{% endif %}
</section>

{% if postcodes %}
<section id="postcodes" class="part">
  <h2>8. Postcode units</h2>
  {% for unit in postcodes %}
  <h3>{{ unit.column }}</h3>
  <p>{{ unit.summary }}</p>
  {% if unit.map %}<figure class="chart">
    <div role="img" aria-label="Map of the named postcode units of {{ unit.column }}">{{ unit.map | safe }}</div>
    <figcaption>The named units of {{ unit.column }}: hatched dark red under the census threshold, blue above it,
      grey without a census population; units whose records are all in classes smaller than k are not drawn.
    </figcaption></figure>{% endif %}
  {% if unit.rows %}
  <table>
    <thead><tr><th>unit</th><th>level</th><th class="num">records</th><th class="num">census population</th>
      <th>threshold {{ unit.threshold }}</th></tr></thead>
    <tbody>
    {% for row in unit.rows %}<tr{% if row.fails %} class="below"{% endif %}>
      <td>{{ row.code }}</td><td>{{ row.level }}</td>
      <td class="num">{{ row.records }}</td><td class="num">{{ row.population }}</td><td>{{ row.status }}</td></tr>
    {% endfor %}
    </tbody>
  </table>
  {% endif %}
  {% for note in unit.notes %}<p class="note">{{ note }}</p>{% endfor %}
  {% endfor %}
</section>
{% endif %}

{% if fix %}
<section id="fix" class="part">
  <h2>{{ fix.number }}. The fix</h2>
  <p>{{ fix.description }}</p>
  <table>
    <thead><tr><th>step</th><th>what it did</th></tr></thead>
    <tbody>{% for kind, facts in fix.steps %}<tr><td>{{ kind }}</td><td>{{ facts }}</td></tr>{% endfor %}</tbody>
  </table>
  <h3>Before and after</h3>
  <table>
    <thead><tr><th>measure</th><th class="num">before the fix</th><th class="num">released table</th></tr></thead>
    <tbody>{% for name, before, after in fix.comparison %}<tr><td>{{ name }}</td><td class="num">{{ before }}</td>
      <td class="num">{{ after }}</td></tr>{% endfor %}</tbody>
  </table>
  <h3>Quasi-identifiers</h3>
  <table>
    <thead><tr><th>column</th><th>change</th><th class="num">distinct values before</th><th class="num">after</th>
      <th class="num">cells changed</th><th>published values (examples)</th></tr></thead>
    <tbody>{% for row in fix.columns %}<tr><td>{{ row.column }}</td><td>{{ row.change }}</td>
      <td class="num">{{ row.before }}</td><td class="num">{{ row.after }}</td><td class="num">{{ row.changed }}</td>
      <td>{{ row.examples }}</td></tr>{% endfor %}</tbody>
  </table>
  <h3>Information loss</h3>
  {% if fix.loss %}
  <table>
    <thead><tr><th>metric</th><th class="num">before the fix</th><th class="num">released table</th></tr></thead>
    <tbody>{% for name, before, after in fix.loss %}<tr><td>{{ name }}</td><td class="num">{{ before }}</td>
      <td class="num">{{ after }}</td></tr>{% endfor %}</tbody>
  </table>
  {% endif %}
  {% if fix.loss_note %}<p class="note">{{ fix.loss_note }}</p>{% endif %}
  {% if fix.estimates.rows or fix.estimates.withheld or fix.estimates_note %}
  <h3>Estimates before and after</h3>
  <p>The estimates the data are published for, on the input and on the released table, with their
    {{ fix.estimates.level }} confidence intervals ({% if fix.estimates.weights %}weighted by
    {{ fix.estimates.weights }}{% else %}unweighted{% endif %}; linearization, no strata or clusters) and the overlap of
    the two intervals (Karr et al. 2006: 1 the same interval, 0 disjoint).</p>
  {% if fix.estimates.rows %}
  <table>
    <thead><tr><th>estimate</th><th>of</th><th class="num">before the fix [CI]</th>
      <th class="num">released table [CI]</th><th class="num">overlap</th><th>note</th></tr></thead>
    <tbody>{% for row in fix.estimates.rows %}<tr><td>{{ row.estimate }}</td><td>{{ row.term }}</td>
      <td class="num">{{ row.before }}</td><td class="num">{{ row.after }}</td><td class="num">{{ row.overlap }}</td>
      <td>{{ row.note }}</td></tr>{% endfor %}</tbody>
  </table>
  {% endif %}
  {% if fix.estimates.withheld %}<p class="note">{{ fix.estimates.withheld }} numbers about fewer than {{ threshold }}
    records (small groups, categories or cells) are withheld.</p>{% endif %}
  {% for note in fix.estimates_notes %}<p class="note">{{ note }}</p>{% endfor %}
  {% if fix.estimates_note %}<p class="note">{{ fix.estimates_note }}</p>{% endif %}
  {% endif %}
  <h3>Recipe</h3>
  <p>The fix as a recipe of {{ fix.recipe_steps | length }} step{{ "s" if fix.recipe_steps | length != 1 }}{% if
     fix.recipe_limit %}, made with a suppression limit of {{ fix.recipe_limit }} of the records{% endif %}.
     SHA-256 of the recipe file as privdash saves it:
     <span class="hash" id="recipe-sha256">{{ fix.recipe_sha256 }}</span>;
     <span class="hash">privdash anonymize FILE --recipe recipe.json</span> re-applies it.</p>
  <table id="recipe-steps">
    <thead><tr><th class="num" style="width: 6%">step</th><th style="width: 16%">technique</th>
      <th style="width: 22%">columns</th><th>parameters</th></tr></thead>
    <tbody>{% for row in fix.recipe_steps %}<tr><td class="num">{{ row.number }}</td><td>{{ row.technique }}</td>
      <td>{{ row.columns }}</td><td>{% for phrase in row.parameters %}{{ phrase }}{% if not loop.last %};<br>
      {% endif %}{% endfor %}</td></tr>{% endfor %}</tbody>
  </table>
  <p class="note" id="recipe-file">The recipe as JSON, condensed ({% if pdf %}attached to this PDF as
    {{ fix.recipe_file }}{% else %}<a href="{{ fix.recipe_data }}" download="{{ fix.recipe_file }}"
    type="application/json">download {{ fix.recipe_file }}</a>{% endif %}): hierarchy tables, orders and value
    mappings are given by their size, since they list original values (of small classes too), and the seed of a
    random step is withheld, so the file describes the recipe and does not re-apply it; the SHA-256 above is of the
    whole recipe file.</p>
</section>
{% endif %}
{{ synthetic }}
<section id="definitions" class="part">
  <h2>{{ definitions_number }}. Definitions</h2>
  <p class="note">As in privdash's definitions (docs/definitions.md), which also give the papers and the ARX and
    sdcMicro classes each measure follows.</p>
  <dl class="definitions">
  {% for item in definitions %}<dt>{{ item.term }}</dt><dd>{{ item.text }}</dd>
  {% endfor %}
  </dl>
  <h3>Made with</h3>
  <table class="facts">
    {% for name, value in parameters %}<tr><th>{{ name }}</th><td>{{ value }}</td></tr>{% endfor %}
  </table>
</section>

<section id="signoff" class="part signoff-block">
  <h2>{{ signoff_number }}. Sign-off</h2>
  <p>Release of <strong>{{ title }}</strong> (SHA-256 of the table <span class="hash">{{ fingerprint.sha256 }}</span>)
    against the targets {{ targets }}. privdash's verdict: <strong>{{ verdict.label }}</strong>.</p>
  <table class="signoff">
  {% if pdf %}
    <tr><th>Name</th><td>{% if signoff.name %}{{ signoff.name }}{% else %}<div class="line"></div>{% endif %}</td></tr>
    <tr><th>Role</th><td>{% if signoff.role %}{{ signoff.role }}{% else %}<div class="line"></div>{% endif %}</td></tr>
    <tr><th>Decision</th><td>{% for value, label in decisions %}<span class="box">{% if signoff.decision == value
      %}&#x2715;{% endif %}</span>{{ label }}{% if not loop.last %} &nbsp; {% endif %}{% endfor %}</td></tr>
    <tr><th>Conditions or reasons</th><td>{% if signoff.conditions %}{{ signoff.conditions }}{% else
      %}<div class="line"></div><div class="line"></div>{% endif %}</td></tr>
    <tr><th>Date</th><td>{% if signoff.date %}{{ signoff.date }}{% else %}<div class="line"></div>{% endif %}</td></tr>
    <tr><th>Signature</th><td><div class="line"></div></td></tr>
  {% else %}
    <tr><th><label for="signoff-name">Name</label></th><td><input type="text" id="signoff-name" name="name"
      value="{{ signoff.name or '' }}"></td></tr>
    <tr><th><label for="signoff-role">Role</label></th><td><input type="text" id="signoff-role" name="role"
      value="{{ signoff.role or '' }}"></td></tr>
    <tr><th>Decision</th><td>{% for value, label in decisions %}
      <label><input type="radio" name="decision" value="{{ value }}"{% if signoff.decision == value %} checked{% endif
      %}> {{ label }}</label>{% endfor %}</td></tr>
    <tr><th><label for="signoff-conditions">Conditions or reasons</label></th>
      <td><textarea id="signoff-conditions" name="conditions" rows="3">{{ signoff.conditions or ''
      }}</textarea></td></tr>
    <tr><th><label for="signoff-date">Date</label></th><td><input type="date" id="signoff-date" name="date"
      value="{{ signoff.date or '' }}"></td></tr>
  {% endif %}
  </table>
</section>
</body>
</html>
"""
