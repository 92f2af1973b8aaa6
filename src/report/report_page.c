/*
 * The report page (imgstat/report.h, docs/report.md): one HTML document
 * with its style, plots (inline SVG with a <title> and <desc> each) and a
 * few lines of script (the table's sorting and filter); a Content Security
 * Policy lets it fetch nothing. Names and messages go through the one
 * escaping (IMGSTAT_ESCAPE_HTML), numbers of the pooled record with the
 * records' round-trip digits, so the page shows what --json says.
 */
#define _DEFAULT_SOURCE /* realpath */
#include "imgstat/record.h"
#include "imgstat/report.h"

#include "report_state.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

#define DISPLAY_BINS 256         /* the most bars a pooled histogram shows */
#define DIST_BINS 40             /* bars of a distribution of means or stds */
#define IST_REPORT_PAGE_ROWS 100 /* the table's rows a page */
#define IST_REPORT_PAGE_ROWS_TEXT "100"

static void esc(FILE *f, const char *s) {
  imgstat_record_escape(f, s ? s : "", IMGSTAT_ESCAPE_HTML);
}

static void num(FILE *f, double v) {
  char buf[40];
  if (!isfinite(v)) {
    fputs(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf", f);
    return;
  }
  imgstat_record_format_double(buf, sizeof buf, v);
  fputs(buf, f);
}

/* ---- links to the files -------------------------------------------------
 */

/* Appends path's segments to the list (".", "" dropped, ".." pops). */
static size_t segments(char *path, char **seg, size_t n, size_t max) {
  for (char *save = NULL, *s = strtok_r(path, "/", &save); s;
       s = strtok_r(NULL, "/", &save)) {
    if (strcmp(s, ".") == 0)
      continue;
    if (strcmp(s, "..") == 0) {
      if (n > 0)
        n--;
      continue;
    }
    if (n < max)
      seg[n++] = s;
  }
  return n;
}

/* The file's href relative to the page's folder (absolute dir), each byte
 * outside the unreserved set percent-encoded. */
static void href(FILE *f, const char *file, const char *dir) {
  char a[2 * PATH_MAX + 2], b[PATH_MAX + 1];
  char *fs[512], *ds[512];
  size_t nf = 0, nd;
  if (file[0] != '/') {
    if (!getcwd(a, PATH_MAX))
      a[0] = '\0';
    nf = segments(a, fs, 0, 512);
    snprintf(a + strlen(a) + 1, PATH_MAX, "%s", file);
    nf = segments(a + strlen(a) + 1, fs, nf, 512);
  } else {
    snprintf(a, sizeof a, "%s", file);
    nf = segments(a, fs, 0, 512);
  }
  snprintf(b, sizeof b, "%s", dir);
  nd = segments(b, ds, 0, 512);
  size_t common = 0;
  while (common < nf && common < nd && strcmp(fs[common], ds[common]) == 0)
    common++;
  for (size_t k = common; k < nd; k++)
    fputs("../", f);
  for (size_t k = common; k < nf; k++) {
    for (const unsigned char *p = (const unsigned char *)fs[k]; *p; p++) {
      if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
          (*p >= '0' && *p <= '9') || strchr("-._~", *p))
        putc(*p, f);
      else
        fprintf(f, "%%%02X", *p);
    }
    if (k + 1 < nf)
      putc('/', f);
  }
}

static void file_link(FILE *f, const char *file, const char *dir) {
  fputs("<a href=\"", f);
  href(f, file, dir);
  fputs("\">", f);
  esc(f, file);
  fputs("</a>", f);
}

/* ---- plots --------------------------------------------------------------
 */

/* A bar chart of n values over [x0, x1] as SVG, counts linear or log. */
static void bars(FILE *f, unsigned *serial, const double *v, int n, int logy,
                 double x0, double x1, const char *title, const char *what) {
  const double W = 320, H = 150, L = 44, R = 8, T = 10, B = 26;
  double top = 0, total = 0;
  int peak = 0;
  for (int i = 0; i < n; i++) {
    total += v[i];
    if (v[i] > v[peak])
      peak = i;
  }
  top = n ? v[peak] : 0;
  double ytop = logy ? log10(top + 1) : top;
  imgstat_number_fprintf(f,
                         "<svg class=\"plot\" viewBox=\"0 0 %.0f %.0f\" "
                         "role=\"img\" aria-labelledby=\"",
                         W, H);
  unsigned id = ++*serial; /* the page's plots numbered: their ids */
  imgstat_number_fprintf(f, "t%u d%u\"><title id=\"t%u\">", id, id, id);
  esc(f, title);
  imgstat_number_fprintf(f, "</title><desc id=\"d%u\">", id);
  imgstat_number_fprintf(f,
                         "%s: %d bars from %.6g to %.6g, %.0f %s in all, "
                         "the most (%.0f) at %.6g; %s counts.",
                         what, n, x0, x1, total, what, top,
                         n ? x0 + (peak + 0.5) * (x1 - x0) / n : x0,
                         logy ? "logarithmic" : "linear");
  fputs("</desc>", f);
  imgstat_number_fprintf(f, "<path class=\"axis\" d=\"M%.0f %.0fV%.0fH%.0f\"/>",
                         L, T, H - B, W - R);
  if (n > 0 && top > 0) {
    double bw = (W - L - R) / n;
    fputs("<path class=\"bar\" d=\"", f);
    for (int i = 0; i < n; i++) {
      double y = logy ? log10(v[i] + 1) : v[i];
      if (y <= 0)
        continue;
      double h = (H - B - T) * y / ytop;
      imgstat_number_fprintf(f, "M%.2f %.0fv%.2fh%.2fv%.2fz", L + i * bw, H - B,
                             -h, bw > 1.2 ? bw - 0.2 : bw, h);
    }
    fputs("\"/>", f);
  }
  imgstat_number_fprintf(
      f,
      "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"start\">%.6g</text>"
      "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.6g</text>"
      "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.4g</text>"
      "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text>",
      L, H - B + 14, x0, W - R, H - B + 14, x1, L - 3, T + 8, top, L - 3,
      H - B);
  fputs("</svg>", f);
}

/* The pooled histogram of a channel, regrouped into at most DISPLAY_BINS
 * bars, linear and log. */
static int pooled_plots(FILE *f, unsigned *serial,
                        const imgstat_dataset_result *ds, int c) {
  const imgstat_histogram *h = &ds->ch[c].hist;
  if (!ds->ch[c].has_histogram || !h->bins || !h->counts)
    return 1;
  uint32_t group = (h->bins + DISPLAY_BINS - 1) / DISPLAY_BINS;
  int n = (int)((h->bins + group - 1) / group);
  double *v = calloc((size_t)n, sizeof *v);
  if (!v)
    return 0;
  for (uint32_t i = 0; i < h->bins; i++)
    v[i / group] += (double)h->counts[i];
  double x0, x1;
  if (h->sample == IMGSTAT_F32) {
    x0 = h->lo;
    x1 = h->hi;
  } else {
    x0 = 0;
    x1 = (h->bins - 1) * ds->hist_scale;
  }
  const char *name = imgstat_channel_name(ds->channels, c);
  char title[96];
  for (int logy = 0; logy < 2; logy++) {
    snprintf(title, sizeof title, "Pooled histogram of channel %s (%s)", name,
             logy ? "log counts" : "linear counts");
    fputs("<figure>", f);
    bars(f, serial, v, n, logy, x0, x1, title, "samples");
    fputs("<figcaption>", f);
    esc(f, name);
    fputs(logy ? ", log counts" : ", linear counts", f);
    fputs("</figcaption></figure>", f);
  }
  free(v);
  return 1;
}

/* The distribution of the images' means (or stds) of channel c. */
static int dist_plot(FILE *f, unsigned *serial, const imgstat_report *r, int c,
                     int stds, const char *name) {
  const float *src = stds ? r->std : r->mean;
  double lo = INFINITY, hi = -INFINITY;
  uint64_t n = 0;
  for (uint64_t i = 0; i < r->nimages; i++) {
    double x = src[i * IST_REPORT_CHANNELS + c];
    if (r->channels[i] > c && isfinite(x)) {
      lo = x < lo ? x : lo;
      hi = x > hi ? x : hi;
      n++;
    }
  }
  if (!n)
    return 0;
  double v[DIST_BINS];
  memset(v, 0, sizeof v);
  double span = hi > lo ? hi - lo : 1;
  for (uint64_t i = 0; i < r->nimages; i++) {
    double x = src[i * IST_REPORT_CHANNELS + c];
    if (r->channels[i] > c && isfinite(x)) {
      int b = (int)((x - lo) / span * DIST_BINS);
      v[b >= DIST_BINS ? DIST_BINS - 1 : b < 0 ? 0 : b] += 1;
    }
  }
  char title[96];
  snprintf(title, sizeof title, "Images' %s of channel %s",
           stds ? "stds" : "means", name);
  fputs("<figure>", f);
  bars(f, serial, v, DIST_BINS, 0, lo, hi > lo ? hi : lo + 1, title, "images");
  fputs("<figcaption>", f);
  fputs(stds ? "std, " : "mean, ", f);
  esc(f, name);
  imgstat_number_fprintf(f, " (%" PRIu64 " images)</figcaption></figure>", n);
  return 1;
}

/* ---- the page ------------------------------------------------------------
 */

static const char style[] =
    ":root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#57606a;"
    "--line:#d0d7de;--bar:#0969da;--head:#f6f8fa;--warn:#9a6700;--bad:#cf222e}"
    "@media(prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;"
    "--muted:#9198a1;--line:#3d444d;--bar:#4493f8;--head:#161b22;"
    "--warn:#d29922;--bad:#f85149}}"
    "body{background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,"
    "sans-serif;margin:0}main{max-width:72rem;margin:0 auto;padding:1rem}"
    "a{color:var(--bar)}h1{font-size:1.5rem}h2{font-size:1.2rem;border-bottom:"
    "1px solid var(--line);padding-bottom:.2rem;margin-top:2rem}"
    "table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid "
    "var(--line);padding:.2rem .45rem;text-align:left;vertical-align:top}"
    "thead th{background:var(--head)}td.n{text-align:right;font-variant-"
    "numeric:tabular-nums}th button{font:inherit;color:inherit;background:"
    "none;border:0;padding:0;cursor:pointer;font-weight:bold}"
    "th[aria-sort=ascending] button::after{content:' \\25B2'}"
    "th[aria-sort=descending] button::after{content:' \\25BC'}"
    "pre{background:var(--head);border:1px solid var(--line);padding:.5rem;"
    "overflow-x:auto;white-space:pre-wrap;word-break:break-all}"
    ".plots{display:flex;flex-wrap:wrap;gap:.5rem}figure{margin:0}"
    "figcaption{color:var(--muted);font-size:.85rem}"
    "svg.plot{width:320px;height:150px}svg .bar{fill:var(--bar)}"
    "svg .axis{stroke:var(--muted);fill:none}svg text{fill:var(--fg);"
    "font-size:10px}.muted{color:var(--muted)}.bad{color:var(--bad)}"
    ".warn{color:var(--warn)}ul.outliers{list-style:none;padding:0;display:"
    "flex;flex-wrap:wrap;gap:.75rem}ul.outliers li{border:1px solid "
    "var(--line);padding:.4rem;max-width:15rem;word-break:break-all}"
    "ul.outliers img{display:block;image-rendering:pixelated;max-width:128px;"
    "min-width:64px;height:auto;"
    "background:repeating-conic-gradient(#999 0 25%,#ccc 0 50%) 0 0/12px "
    "12px}.wrap{overflow-x:auto}#image-table "
    "td.f{word-break:break-all;min-width:"
    "12rem}label{margin-right:.5rem}"
    "@page{size:A4;margin:12mm}"
    "@media print{body{font-size:9pt;background:#fff;color:#000}main{"
    "max-width:none;padding:0}.wrap{overflow:visible}table{width:100%;"
    "table-layout:fixed;font-size:7pt}th,td{word-break:break-all;padding:"
    ".1rem .2rem}thead{display:table-header-group}tr,figure,li{break-inside:"
    "avoid}#filter-box,th button::after{display:none}svg .bar{fill:#333}"
    "svg text{fill:#000}a{color:#000}pre{white-space:pre-wrap}}";

static const char script[] =
    "(function(){"
    "var t=document.getElementById('image-table');if(!t)return;"
    "var data=JSON.parse(document.getElementById('image-data').textContent);"
    "var "
    "tb=t.tBodies[0],hs=t.tHead.rows[0].cells,nc=hs.length,"
    "per=" IST_REPORT_PAGE_ROWS_TEXT ";"
    "var "
    "f=document.getElementById('filter'),shown=document.getElementById('shown')"
    ";"
    "var "
    "pg=document.getElementById('page'),prev=document.getElementById('prev'),"
    "next=document.getElementById('next');"
    "var text=data.map(function(r){return r.join(' ').toLowerCase();});"
    "var order=data.map(function(r,i){return i;}),view=order,page=0;"
    "function cell(r,c){if(c===0)return r[0];if(c===1)return "
    "r[1];if(c<nc-1)return r[c+1];return r[r.length-2];}"
    "function render(){var "
    "n=view.length,last=Math.max(0,Math.ceil(n/per)-1);if(page>last)page=last;"
    "var frag=document.createDocumentFragment();"
    "view.slice(page*per,page*per+per).forEach(function(i){var "
    "r=data[i],tr=document.createElement('tr');if(r[r.length-1])tr.className=r["
    "r.length-1];"
    "for(var c=0;c<nc;c++){var td=document.createElement('td'),v=cell(r,c);"
    "if(c===1){var "
    "a=document.createElement('a');a.href=r[2];a.textContent=r[1];td."
    "appendChild(a);td.className='f';}"
    "else{td.textContent=v===null?'':String(v);if(hs[c].hasAttribute('data-num'"
    "))td.className='n';}"
    "tr.appendChild(td);}frag.appendChild(tr);});"
    "tb.textContent='';tb.appendChild(frag);shown.textContent=n;"
    "pg.textContent=n?'rows '+(page*per+1)+'-'+Math.min(n,page*per+per)+' of "
    "'+n:'no rows';"
    "prev.disabled=page===0;next.disabled=page>=last;}"
    "function filter(){var "
    "q=f.value.toLowerCase();view=order.filter(function(i){return "
    "text[i].indexOf(q)>=0;});page=0;render();}"
    "f.addEventListener('input',filter);"
    "prev.addEventListener('click',function(){page--;render();});"
    "next.addEventListener('click',function(){page++;render();});"
    "[].forEach.call(hs,function(th,c){th.querySelector('button')."
    "addEventListener('click',function(){"
    "var "
    "up=th.getAttribute('aria-sort')!=='ascending',num=th.hasAttribute('data-"
    "num');"
    "[].forEach.call(hs,function(o){o.removeAttribute('aria-sort');});"
    "th.setAttribute('aria-sort',up?'ascending':'descending');"
    "function key(i){var v=cell(data[i],c);if(num)return "
    "v===null?-Infinity:v;return v===null?'':String(v);}"
    "order.sort(function(a,b){var x=key(a),y=key(b),d=x<y?-1:x>y?1:a-b;return "
    "up?d:-d;});filter();});});"
    "render();})();";

static void kv(FILE *f, const char *key) {
  fputs("<tr><th scope=\"row\">", f);
  fputs(key, f);
  fputs("</th><td>", f);
}

static void run_section(FILE *f, const imgstat_report *r,
                        const imgstat_report_run *run,
                        const imgstat_dataset_result *ds) {
  fputs("<section id=\"run\" aria-labelledby=\"h-run\"><h2 id=\"h-run\">The "
        "run</h2><table class=\"kv\"><tbody>",
        f);
  kv(f, "version");
  fputs("imgstat " IMGSTAT_VERSION "</td></tr>", f);
  kv(f, "command line");
  fputs("<code id=\"command-line\">", f);
  esc(f, run->command_line);
  fputs("</code></td></tr>", f);
  kv(f, "inputs");
  for (int k = 0; k < run->ninputs; k++) {
    fputs(k ? ", <code>" : "<code>", f);
    esc(f, run->inputs[k]);
    fputs("</code>", f);
  }
  fputs("</td></tr>", f);
  kv(f, "backend");
  esc(f, run->backend ? run->backend : "auto");
  imgstat_number_fprintf(
      f, " (used: cpu for %" PRIu64 " images, gpu for %" PRIu64 ")</td></tr>",
      r->backend_count[0], r->backend_count[1]);
  kv(f, "decoder");
  esc(f, run->decoder ? run->decoder : "cpu");
  fputs(" (formats read:", f);
  for (size_t k = 0; k < r->nformats; k++)
    imgstat_number_fprintf(f, "%s %s %" PRIu64, k ? "," : "", r->formats[k],
                           r->format_count[k]);
  fputs(r->nformats ? ")" : " none)", f);
  fputs("</td></tr>", f);
  kv(f, "started");
  time_t t = (time_t)run->started;
  struct tm tm;
  char when[64] = "";
  if (gmtime_r(&t, &tm))
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  fputs(when, f);
  imgstat_number_fprintf(f, "</td></tr>");
  kv(f, "duration");
  imgstat_number_fprintf(f, "%.3f s</td></tr>", run->seconds);
  if (run->ranks > 0) {
    kv(f, "MPI ranks");
    imgstat_number_fprintf(f,
                           "%d (each read its share of the inputs)</td>"
                           "</tr>",
                           run->ranks);
  }
  uint64_t left_out = ds ? ds->nexcluded : 0;
  kv(f, "inputs");
  imgstat_number_fprintf(f,
                         "<span id=\"count-inputs\">%" PRIu64 "</span></td>"
                         "</tr>",
                         r->inputs);
  kv(f, "read");
  imgstat_number_fprintf(f,
                         "<span id=\"count-read\">%" PRIu64 "</span></td></tr>",
                         r->inputs - r->failed);
  kv(f, "pooled");
  imgstat_number_fprintf(
      f, "<span id=\"count-pooled\">%" PRIu64 "</span></td></tr>",
      ds ? ds->pooled : 0);
  kv(f, "left out");
  imgstat_number_fprintf(
      f, "<span id=\"count-left-out\">%" PRIu64 "</span></td></tr>", left_out);
  kv(f, "failed");
  imgstat_number_fprintf(
      f, "<span id=\"count-failed\">%" PRIu64 "</span></td></tr>", r->failed);
  fputs("</tbody></table></section>", f);
}

static void pooled_section(FILE *f, const imgstat_dataset_result *ds,
                           const imgstat_report_run *run, const char *dir) {
  fputs("<section id=\"pooled\" aria-labelledby=\"h-pooled\"><h2 "
        "id=\"h-pooled\">Pooled record</h2>",
        f);
  if (!ds || !ds->channels) {
    fputs("<p>No image was pooled.</p></section>", f);
    return;
  }
  imgstat_number_fprintf(
      f, "<p>%" PRIu64 " images pooled as %s, %s%s, ddof %d.</p>", ds->pooled,
      imgstat_layout_name(ds->channels),
      ds->depths == 3   ? "8 and 16-bit"
      : ds->depths == 2 ? "16-bit"
      : ds->depths == 4 ? "float"
                        : "8-bit",
      ds->scale_unit ? ", samples scaled to 0..1" : "", ds->ddof);
  if (ds->histogram_note[0]) {
    fputs("<p class=\"muted\">", f);
    esc(f, ds->histogram_note);
    fputs("</p>", f);
  }
  imgstat_hist_figures hf[IMGSTAT_MAX_CHANNELS];
  imgstat_dataset_hist_figures(ds, run->percentiles, run->npercentiles, hf);
  fputs("<div class=\"wrap\"><table id=\"pooled-table\"><caption>Pooled "
        "figures per channel</caption><thead><tr><th scope=\"col\">channel"
        "</th><th scope=\"col\">count</th><th scope=\"col\">min</th><th "
        "scope=\"col\">min at</th><th scope=\"col\">max</th><th "
        "scope=\"col\">max at</th><th scope=\"col\">mean</th><th "
        "scope=\"col\">std</th><th scope=\"col\">median</th>",
        f);
  for (int k = 0; k < run->npercentiles; k++)
    imgstat_number_fprintf(f, "<th scope=\"col\">p%g</th>",
                           run->percentiles[k]);
  fputs("</tr></thead><tbody>", f);
  for (int c = 0; c < ds->channels; c++) {
    const imgstat_dataset_channel *ch = &ds->ch[c];
    imgstat_number_fprintf(
        f,
        "<tr data-channel=\"%d\"><th scope=\"row\">%s</th><td class=\"n\" "
        "data-key=\"count\">%" PRIu64 "</td>",
        c, imgstat_channel_name(ds->channels, c), ch->count);
    const char *keys[2] = {"min", "max"};
    for (int e = 0; e < 2; e++) {
      const imgstat_dataset_where *w = e ? &ch->max_at : &ch->min_at;
      fprintf(f, "<td class=\"n\" data-key=\"%s\">", keys[e]);
      if (ch->has_values)
        num(f, e ? ch->max : ch->min);
      fputs("</td><td>", f);
      if (ch->has_values && w->file) {
        file_link(f, w->file, dir);
        imgstat_number_fprintf(f, " (%u, %u)", w->x, w->y);
      }
      fputs("</td>", f);
    }
    fputs("<td class=\"n\" data-key=\"mean\">", f);
    if (ch->has_values)
      num(f, ch->mean);
    fputs("</td><td class=\"n\" data-key=\"std\">", f);
    if (ch->has_std)
      num(f, ch->std);
    fputs("</td><td class=\"n\" data-key=\"median\">", f);
    if (ch->has_histogram && hf[c].has_values)
      num(f, hf[c].median * ds->hist_scale);
    fputs("</td>", f);
    for (int k = 0; k < run->npercentiles; k++) {
      imgstat_number_fprintf(f, "<td class=\"n\" data-key=\"p%g\">",
                             run->percentiles[k]);
      if (ch->has_histogram && hf[c].has_values && k < hf[c].npercentiles)
        num(f, hf[c].percentile[k] * ds->hist_scale);
      fputs("</td>", f);
    }
    fputs("</tr>", f);
  }
  fputs("</tbody></table></div></section>", f);
}

static void constants_section(FILE *f, const imgstat_dataset_result *ds,
                              const imgstat_report_run *run) {
  fputs("<section id=\"constants\" aria-labelledby=\"h-constants\"><h2 "
        "id=\"h-constants\">Constants</h2>",
        f);
  if (!ds || !ds->channels) {
    fputs("<p>None: no image was pooled.</p></section>", f);
    return;
  }
  unsigned emit = run->emit;
  if (!emit && ds->scale_unit)
    emit = 1u << IMGSTAT_EMIT_TORCHVISION;
  fputs("<p>The pooled mean and std in the pool's units:</p><pre><code>mean=[",
        f);
  for (int c = 0; c < ds->channels; c++) {
    fputs(c ? ", " : "", f);
    num(f, ds->ch[c].mean);
  }
  fputs("], std=[", f);
  for (int c = 0; c < ds->channels; c++) {
    fputs(c ? ", " : "", f);
    if (ds->ch[c].has_std)
      num(f, ds->ch[c].std);
    else
      fputs("null", f);
  }
  fputs("]</code></pre>", f);
  if (!emit) {
    fputs("<p>The run printed no framework's constants (they come with "
          "<code>--scale unit</code> or <code>--emit FORM</code>).</p>",
          f);
  }
  for (int k = 0; k < IMGSTAT_EMIT_COUNT; k++) {
    if (!(emit & (1u << k)))
      continue;
    char line[IMGSTAT_EMIT_MAX];
    imgstat_error e;
    memset(&e, 0, sizeof e);
    fprintf(f, "<p>%s:</p>", imgstat_emit_name((imgstat_emit)k));
    if (imgstat_dataset_emit(ds, (imgstat_emit)k, line, sizeof line, &e) ==
        IMGSTAT_OK) {
      fprintf(f, "<pre><code class=\"emit\" data-form=\"%s\">",
              imgstat_emit_name((imgstat_emit)k));
      esc(f, line);
      fputs("</code></pre>", f);
    } else {
      fputs("<p class=\"muted\">", f);
      esc(f, e.message);
      fputs("</p>", f);
    }
  }
  fputs("</section>", f);
}

/* Channel c's name among channels (at most IST_REPORT_CHANNELS): a band's
 * number ("1", "2", ...) when any image read has more channels than the
 * report keeps, since then the first column holds the first band of each
 * image, whatever its layout. */
static const char *channel_name(const imgstat_report *r, int channels, int c) {
  return r->max_channels > IST_REPORT_CHANNELS
             ? imgstat_channel_name(IMGSTAT_MAX_CHANNELS, c)
             : imgstat_channel_name(channels, c);
}

/* What is shown of images of more than IST_REPORT_CHANNELS channels: the
 * first ones (a note with the id given; nothing when there are none). */
static void bands_note(FILE *f, const imgstat_report *r, const char *id,
                       const char *what) {
  if (!r->wide)
    return;
  imgstat_number_fprintf(
      f,
      "<p id=\"%s\">%" PRIu64 " image%s ha%s more than %d "
      "channels (up to %d bands): the report keeps the mean and std of the "
      "first %d bands of each image, so %s show bands 1 to %d only (the "
      "pooled record and histograms above cover every band).</p>",
      id, r->wide, r->wide == 1 ? "" : "s", r->wide == 1 ? "s" : "ve",
      IST_REPORT_CHANNELS, r->max_channels, IST_REPORT_CHANNELS, what,
      IST_REPORT_CHANNELS);
}

static int plots_sections(FILE *f, const imgstat_report *r,
                          const imgstat_dataset_result *ds) {
  fputs("<section id=\"histograms\" aria-labelledby=\"h-histograms\"><h2 "
        "id=\"h-histograms\">Pooled histograms</h2>",
        f);
  int any = 0;
  unsigned serial = 0;
  for (int c = 0; ds && c < ds->channels; c++)
    any = any || ds->ch[c].has_histogram;
  if (!any) {
    fputs("<p>No pooled histogram", f);
    if (ds && ds->histogram_note[0]) {
      fputs(": ", f);
      esc(f, ds->histogram_note);
    }
    fputs(".</p>", f);
  }
  for (int c = 0; any && c < ds->channels; c++) {
    fputs("<div class=\"plots\">", f);
    if (!pooled_plots(f, &serial, ds, c))
      return 0;
    fputs("</div>", f);
  }
  fputs("</section><section id=\"distributions\" "
        "aria-labelledby=\"h-distributions\"><h2 id=\"h-distributions\">The "
        "images' means and stds</h2><p>Over every image read (not the "
        "table's sample), in each image's own units (a gray image's one "
        "channel counted as the first).</p>",
        f);
  int maxc = 0;
  for (uint64_t i = 0; i < r->nimages; i++)
    maxc = r->channels[i] > maxc ? r->channels[i] : maxc;
  if (maxc > IST_REPORT_CHANNELS)
    maxc = IST_REPORT_CHANNELS;
  bands_note(f, r, "bands-note-distributions", "these plots");
  for (int c = 0; c < maxc; c++) {
    char name[32];
    snprintf(name, sizeof name, "%s", channel_name(r, maxc, c));
    fputs("<div class=\"plots\">", f);
    dist_plot(f, &serial, r, c, 0, name);
    dist_plot(f, &serial, r, c, 1, name);
    fputs("</div>", f);
  }
  if (!maxc)
    fputs("<p>No image was read.</p>", f);
  fputs("</section>", f);
  return 1;
}

static void outliers_section(FILE *f, const imgstat_report *r,
                             const imgstat_dataset_result *ds,
                             const char *dir) {
  fputs("<section id=\"outliers\" aria-labelledby=\"h-outliers\"><h2 "
        "id=\"h-outliers\">Outliers</h2>",
        f);
  size_t n = ds ? ds->noutliers : 0;
  if (!n) {
    fputs("<p>None.</p></section>", f);
    return;
  }
  size_t shown = n < r->opt.list_max ? n : r->opt.list_max;
  imgstat_number_fprintf(f,
                         "<p>%zu image%s flagged (robust z beyond %g, or "
                         "another layout, depth or size than most images, or "
                         "constant)%s; the first %zu with a thumbnail made "
                         "from its pixels.</p><ul class=\"outliers\">",
                         n, n == 1 ? "" : "s", ds->outlier_z,
                         shown < n ? ", the first ones listed" : "",
                         n < r->opt.thumbs_max ? n : r->opt.thumbs_max);
  for (size_t k = 0; k < shown; k++) {
    const imgstat_dataset_note *o = &ds->outliers[k];
    fputs("<li class=\"outlier\">", f);
    if (k < r->opt.thumbs_max) {
      char *uri = NULL;
      imgstat_error e;
      memset(&e, 0, sizeof e);
      if (ist_report_thumbnail(o->file, &r->opt.load, r->opt.thumb_size, &uri,
                               &e) == IMGSTAT_OK) {
        fputs("<img alt=\"thumbnail of ", f);
        esc(f, o->file);
        fprintf(f, "\" src=\"%s\">", uri);
        free(uri);
      } else {
        fputs("<p class=\"bad\">no thumbnail: ", f);
        esc(f, e.message);
        fputs("</p>", f);
      }
    }
    file_link(f, o->file, dir);
    fputs("<br><span class=\"warn reason\">", f);
    esc(f, o->reason);
    fputs("</span></li>", f);
  }
  fputs("</ul>", f);
  if (shown < n)
    imgstat_number_fprintf(f, "<p>and %zu more.</p>", n - shown);
  fputs("</section>", f);
}

static int note_by_reason(const void *a, const void *b) {
  const imgstat_dataset_note *x = *(const imgstat_dataset_note *const *)a;
  const imgstat_dataset_note *y = *(const imgstat_dataset_note *const *)b;
  int c = strcmp(x->reason, y->reason);
  return c ? c : (x->ordinal > y->ordinal) - (x->ordinal < y->ordinal);
}

static void group_open(FILE *f, const char *reason, uint64_t count) {
  fputs("<details open class=\"group\"><summary><span class=\"reason\">", f);
  esc(f, reason);
  imgstat_number_fprintf(f,
                         "</span>: <span class=\"count\">%" PRIu64
                         "</span> file%s</summary><ul>",
                         count, count == 1 ? "" : "s");
}

static int left_out_section(FILE *f, const imgstat_report *r,
                            const imgstat_dataset_result *ds, const char *dir) {
  fputs("<section id=\"left-out\" aria-labelledby=\"h-left-out\"><h2 "
        "id=\"h-left-out\">Left out of the pool</h2>",
        f);
  size_t n = ds ? ds->nexcluded : 0;
  if (!n) {
    fputs("<p>None.</p></section>", f);
    return 1;
  }
  const imgstat_dataset_note **v = malloc(n * sizeof *v);
  if (!v)
    return 0;
  for (size_t k = 0; k < n; k++)
    v[k] = &ds->excluded[k];
  qsort(v, n, sizeof *v, note_by_reason);
  for (size_t k = 0; k < n;) {
    size_t e = k;
    while (e < n && strcmp(v[e]->reason, v[k]->reason) == 0)
      e++;
    group_open(f, v[k]->reason, e - k);
    for (size_t j = k; j < e && j - k < r->opt.list_max; j++) {
      fputs("<li>", f);
      file_link(f, v[j]->file, dir);
      fputs("</li>", f);
    }
    fputs("</ul>", f);
    if (e - k > r->opt.list_max)
      imgstat_number_fprintf(f, "<p>and %zu more.</p>",
                             e - k - r->opt.list_max);
    fputs("</details>", f);
    k = e;
  }
  free(v);
  fputs("</section>", f);
  return 1;
}

static void failed_section(FILE *f, const imgstat_report *r, const char *dir) {
  fputs("<section id=\"failed\" aria-labelledby=\"h-failed\"><h2 "
        "id=\"h-failed\">Failed</h2>",
        f);
  if (!r->ngroups)
    fputs("<p>None.</p>", f);
  for (size_t g = 0; g < r->ngroups; g++) {
    const ist_report_group *gr = &r->groups[g];
    group_open(f, gr->reason, gr->count);
    for (size_t k = 0; k < gr->nfiles; k++) {
      fputs("<li>", f);
      file_link(f, gr->files[k], dir);
      fputs("</li>", f);
    }
    fputs("</ul>", f);
    if (gr->count > gr->nfiles)
      imgstat_number_fprintf(f, "<p>and %" PRIu64 " more.</p>",
                             gr->count - gr->nfiles);
    fputs("</details>", f);
  }
  fputs("</section>", f);
}

static int row_by_ordinal(const void *a, const void *b) {
  const ist_report_row *x = a, *y = b;
  return (x->ordinal > y->ordinal) - (x->ordinal < y->ordinal);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The note of row's ordinal among the sorted ordinals (index into notes). */
static const imgstat_dataset_note *lookup(const uint64_t *sorted,
                                          const size_t *index,
                                          const imgstat_dataset_note *notes,
                                          size_t n, uint64_t ordinal) {
  const uint64_t *p = bsearch(&ordinal, sorted, n, sizeof *sorted, cmp_u64);
  return p ? &notes[index[p - sorted]] : NULL;
}

/* Sorted ordinals of notes with the note each came from. */
static int note_index(const imgstat_dataset_note *notes, size_t n,
                      uint64_t **sorted, size_t **index) {
  *sorted = NULL;
  *index = NULL;
  if (!n)
    return 1;
  uint64_t *pairs = malloc(2 * n * sizeof *pairs);
  *sorted = malloc(n * sizeof **sorted);
  *index = malloc(n * sizeof **index);
  if (!pairs || !*sorted || !*index) {
    free(pairs);
    return 0;
  }
  /* sort (ordinal, k) pairs: a two-field sort through one array */
  for (size_t k = 0; k < n; k++) {
    pairs[2 * k] = notes[k].ordinal;
    pairs[2 * k + 1] = k;
  }
  qsort(pairs, n, 2 * sizeof *pairs, cmp_u64);
  for (size_t k = 0; k < n; k++) {
    (*sorted)[k] = pairs[2 * k];
    (*index)[k] = (size_t)pairs[2 * k + 1];
  }
  free(pairs);
  return 1;
}

/* s as a JSON string inside a <script> element: the one JSON escaping,
 * then '<' as \u003c so that no "</script>" can end the element. */
static void script_string(FILE *f, const char *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) {
    fputs("\"\"", f);
    return;
  }
  imgstat_record_json_string(m, s ? s : "");
  fclose(m);
  for (size_t k = 0; k < len; k++)
    if (buf[k] == '<')
      fputs("\\u003c", f);
    else
      putc(buf[k], f);
  free(buf);
}

static void script_href(FILE *f, const char *file, const char *dir) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) {
    fputs("\"\"", f);
    return;
  }
  href(m, file, dir);
  fclose(m);
  script_string(f, buf);
  free(buf);
}

static void script_number(FILE *f, double v) {
  if (isfinite(v))
    imgstat_number_fprintf(f, "%.6g", v);
  else
    fputs("null", f);
}

/* The table: its rows as JSON data that the page's script shows a page at
 * a time (sorted and filtered over every row), so that the page loads as
 * fast with 2000 rows as with 20. */
static int images_section(FILE *f, imgstat_report *r,
                          const imgstat_dataset_result *ds, const char *dir) {
  qsort(r->rows, r->nrows, sizeof *r->rows, row_by_ordinal);
  fputs("<section id=\"images\" aria-labelledby=\"h-images\"><h2 "
        "id=\"h-images\">Images</h2><p id=\"table-says\">",
        f);
  if (r->nrows == r->inputs)
    imgstat_number_fprintf(f, "All %" PRIu64 " inputs, in input order.",
                           r->inputs);
  else
    imgstat_number_fprintf(
        f,
        "%zu of the %" PRIu64 " inputs: a deterministic sample (the %zu "
        "inputs whose place in the input list hashes lowest by splitmix64), "
        "in input order. The plots and counts above are over every input.",
        r->nrows, r->inputs, r->nrows);
  int nc = 0;
  for (size_t k = 0; k < r->nrows; k++)
    nc = r->rows[k].channels > nc ? r->rows[k].channels : nc;
  if (nc > IST_REPORT_CHANNELS)
    nc = IST_REPORT_CHANNELS;
  fputs("</p>", f);
  bands_note(f, r, "bands-note-table", "the table's means and stds");
  imgstat_number_fprintf(
      f,
      "<p>Shown %d rows a page; sort by a column's header, filter by any "
      "text of a row.</p><noscript><p>The table needs the page's script "
      "(its rows are in the element image-data).</p></noscript>"
      "<p id=\"filter-box\"><label for=\"filter\">Filter</label><input "
      "id=\"filter\" type=\"search\" placeholder=\"any text in a row\"> "
      "<span id=\"shown\">%zu</span> rows match. <button type=\"button\" "
      "id=\"prev\">previous</button> <span id=\"page\"></span> <button "
      "type=\"button\" id=\"next\">next</button></p><div class=\"wrap\">"
      "<table id=\"image-table\"><caption>One row per input: its size, "
      "layout, mean and std per channel in its own units (a gray image's "
      "in the first column), and what is notable about it</caption>"
      "<thead><tr><th scope=\"col\" data-num><button type=\"button\">#"
      "</button></th><th scope=\"col\"><button type=\"button\">file</button>"
      "</th><th scope=\"col\" data-num><button type=\"button\">width</button>"
      "</th><th scope=\"col\" data-num><button type=\"button\">height"
      "</button></th><th scope=\"col\"><button type=\"button\">layout"
      "</button></th><th scope=\"col\" data-num><button type=\"button\">bits"
      "</button></th><th scope=\"col\"><button type=\"button\">format"
      "</button></th>",
      IST_REPORT_PAGE_ROWS, r->nrows);
  for (int s = 0; s < 2; s++)
    for (int c = 0; c < nc; c++)
      fprintf(f,
              "<th scope=\"col\" data-num><button type=\"button\">%s %s"
              "</button></th>",
              s ? "std" : "mean", channel_name(r, nc, c));
  fputs("<th scope=\"col\"><button type=\"button\">note</button></th></tr>"
        "</thead><tbody></tbody></table></div>"
        "<script type=\"application/json\" id=\"image-data\">[",
        f);
  uint64_t *os = NULL, *es = NULL;
  size_t *oi = NULL, *ei = NULL;
  size_t no = ds ? ds->noutliers : 0, ne = ds ? ds->nexcluded : 0;
  int ok = note_index(no ? ds->outliers : NULL, no, &os, &oi) &&
           note_index(ne ? ds->excluded : NULL, ne, &es, &ei);
  /* each row: [#, file, href, width, height, layout, bits, format,
   * means..., stds..., note, class] */
  for (size_t k = 0; ok && k < r->nrows; k++) {
    const ist_report_row *w = &r->rows[k];
    const imgstat_dataset_note *o =
        no ? lookup(os, oi, ds->outliers, no, w->ordinal) : NULL;
    const imgstat_dataset_note *x =
        ne ? lookup(es, ei, ds->excluded, ne, w->ordinal) : NULL;
    imgstat_number_fprintf(f, "%s\n[%" PRIu64 ",", k ? "," : "", w->ordinal);
    script_string(f, w->file);
    putc(',', f);
    script_href(f, w->file, dir);
    if (w->sample)
      imgstat_number_fprintf(f, ",%u,%u,\"%s\",%d,", w->width, w->height,
                             imgstat_layout_name(w->channels), 8 * w->sample);
    else
      fputs(",null,null,\"\",null,", f);
    script_string(f, w->format ? w->format : "");
    for (int s = 0; s < 2; s++)
      for (int c = 0; c < nc; c++) {
        putc(',', f);
        script_number(f, s ? w->std[c] : w->mean[c]);
      }
    putc(',', f);
    char note[IMGSTAT_ERROR_MAX + 200];
    snprintf(note, sizeof note, "%s%s",
             w->error ? "failed: "
             : x      ? "left out: "
             : o      ? "outlier: "
                      : "",
             w->error ? w->error
             : x      ? x->reason
             : o      ? o->reason
                      : "");
    script_string(f, note);
    fprintf(f, ",\"%s\"]", w->error ? "bad" : o ? "warn" : "");
  }
  free(os);
  free(oi);
  free(es);
  free(ei);
  fputs("]</script></section>", f);
  return ok;
}

imgstat_status ist_report_page(FILE *f, imgstat_report *r, const char *path,
                               const imgstat_report_run *run,
                               const imgstat_dataset_result *ds,
                               imgstat_error *err) {
  /* the page's folder, absolute: the files' links are relative to it */
  char dir[PATH_MAX + 1], *parent = malloc(strlen(path) + 3);
  if (!parent)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "%s: out of memory", path);
  strcpy(parent, path);
  char *slash = strrchr(parent, '/');
  if (!slash)
    strcpy(parent, ".");
  else if (slash == parent)
    parent[1] = '\0';
  else
    *slash = '\0';
  if (!realpath(parent, dir)) {
    free(parent);
    return imgstat_error_set(err, IMGSTAT_ERR_IO,
                             "%s: its folder cannot be found", path);
  }
  free(parent);
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
        "'none'; img-src data:; style-src 'unsafe-inline'; script-src "
        "'unsafe-inline'\"><meta name=\"viewport\" content=\"width=device-"
        "width, initial-scale=1\"><meta name=\"generator\" "
        "content=\"imgstat " IMGSTAT_VERSION
        "\"><title>imgstat report</title><style>",
        f);
  fputs(style, f);
  fputs("</style></head><body><main><h1>imgstat report</h1><nav "
        "aria-label=\"sections\"><a href=\"#run\">run</a> · <a "
        "href=\"#pooled\">pooled record</a> · <a href=\"#constants\">"
        "constants</a> · <a href=\"#histograms\">histograms</a> · <a "
        "href=\"#distributions\">means and stds</a> · <a href=\"#outliers\">"
        "outliers</a> · <a href=\"#left-out\">left out</a> · <a "
        "href=\"#failed\">failed</a> · <a href=\"#images\">images</a></nav>",
        f);
  run_section(f, r, run, ds);
  pooled_section(f, ds, run, dir);
  constants_section(f, ds, run);
  int ok = plots_sections(f, r, ds);
  if (ok)
    outliers_section(f, r, ds, dir);
  ok = ok && left_out_section(f, r, ds, dir);
  if (ok)
    failed_section(f, r, dir);
  ok = ok && images_section(f, r, ds, dir);
  fputs("</main><script>", f);
  fputs(script, f);
  fputs("</script></body></html>\n", f);
  if (!ok)
    return imgstat_error_set(err, IMGSTAT_ERR_NOMEM, "%s: out of memory", path);
  return IMGSTAT_OK;
}
