#!/usr/bin/env python3
"""The report page in a real browser (headless Chromium through Selenium).

A mixed folder (report_check.py's: RGB, gray, RGBA, 16-bit, a corrupt file,
a black and a bright outlier, an odd name) run with --dataset --json
--report; the page opened from its file:
  * no console error (the browser's log);
  * no request leaves the page: every request the DevTools log saw is the
    page's own file: URL or a data: URI, and the resource timing lists no
    http(s) entry;
  * every section there, the outliers' thumbnails decoded by the browser;
  * the pooled mean, std, min and max per channel on the page equal the
    --json record's;
  * clicking a column's header sorts the table (ascending, then
    descending), typing in the filter shows only the matching rows;
  * light and dark mode (prefers-color-scheme) both give the text a
    contrast of at least 7:1; printed (media print) at an A4 page's width
    no table is wider than the page;
  * a screenshot kept in ARTIFACT_DIR/report.png;
  * a 100,000-input run's page (a --files-from list repeating three tiny
    files) stays under 2 MB and loads in under 2 s.

Usage: report_browser_test.py IMGSTAT ARTIFACT_DIR TMPDIR BROWSER
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_check  # noqa: E402 (the folder, the run's options)

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg)


def browser(tmp, binary):
    """Headless Chromium whose profile and temporaries stay under tmp."""
    env = dict(os.environ, TMPDIR=tmp, HOME=tmp)
    o = webdriver.ChromeOptions()
    o.binary_location = binary
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu",
              "--disable-dev-shm-usage", "--window-size=1100,1400",
              "--user-data-dir=" + os.path.join(tmp, "profile"),
              "--no-first-run", "--disable-background-networking",
              "--disable-component-update", "--disable-sync"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs",
                     {"browser": "ALL", "performance": "ALL"})
    svc = Service(log_path=os.devnull, env=env)
    return webdriver.Chrome(service=svc, options=o)


def requests_seen(d):
    """URLs of the DevTools log's Network.requestWillBeSent events of
    documents loaded from file: (the page; not the browser's own pages)."""
    urls = []
    for e in d.get_log("performance"):
        m = json.loads(e["message"])["message"]
        if m.get("method") == "Network.requestWillBeSent" and \
                m["params"].get("documentURL", "").startswith("file:"):
            urls.append(m["params"]["request"]["url"])
    return urls


def luminance(css):
    v = [float(x) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3]]
    v = [c / 255 for c in v]
    v = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
         for c in v]
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]


def contrast(d):
    fg, bg = d.execute_script(
        "var s=getComputedStyle(document.body);return [s.color,"
        "s.backgroundColor];")
    a, b = sorted((luminance(fg), luminance(bg)))
    return (b + 0.05) / (a + 0.05)


def column(d, i):
    return [r.find_elements(By.TAG_NAME, "td")[i].text
            for r in d.find_elements(By.CSS_SELECTOR, "#image-table tbody tr")
            if r.is_displayed()]


def main():
    imgstat, artifacts, tmp, binary = sys.argv[1:5]
    d_imgs = os.path.join(tmp, "imgs")
    report_check.make_folder(d_imgs)
    page = os.path.join(tmp, "report.html")
    run = subprocess.run([imgstat, "--json"] + report_check.RUN +
                         ["--report", page, d_imgs],
                         capture_output=True, text=True, cwd=tmp)
    check(run.returncode == 1 and os.path.exists(page),
          "the run (one corrupt input: exit 1): %d %s" % (run.returncode,
                                                          run.stderr))
    record = [json.loads(x) for x in run.stdout.splitlines()][-1]["dataset"]
    btmp = os.path.join(tmp, "browser")
    os.makedirs(btmp)
    d = browser(btmp, binary)
    try:
        requests_seen(d)  # the browser's own start-up, before the page
        d.get("file://" + page)
        logs = d.get_log("browser")
        for e in logs:
            print("console:", e["level"], e["message"])
        check(not [e for e in logs if e["level"] == "SEVERE"],
              "no console error")
        urls = requests_seen(d)
        check("file://" + page in urls and all(u.startswith("file:") or u.startswith("data:")
                           for u in urls),
              "no request leaves the page: %s" % urls[:5])
        res = d.execute_script(
            "return performance.getEntriesByType('resource')"
            ".map(function(e){return e.name;});")
        check(not [u for u in res if u.split(":")[0] in ("http", "https",
                                                         "ws", "wss")],
              "no http(s) resource: %s" % res[:5])
        for sid in ("run", "pooled", "constants", "histograms",
                    "distributions", "outliers", "left-out", "failed",
                    "images"):
            check(d.find_elements(By.ID, sid), "section %s" % sid)
        thumbs = d.find_elements(By.CSS_SELECTOR, "#outliers img")
        check(len(thumbs) == 2 and all(
            d.execute_script("return arguments[0].complete && "
                             "arguments[0].naturalWidth", t) for t in thumbs),
              "the outliers' thumbnails decoded")
        # the page's numbers are the --json record's
        for c, ch in enumerate(record["stats"]):
            for key in ("mean", "std", "min", "max"):
                cell = d.find_elements(
                    By.CSS_SELECTOR, '#pooled-table tr[data-channel="%d"] '
                    'td[data-key="%s"]' % (c, key))
                got = float(cell[0].text) if cell else None
                check(got == float(ch[key]),
                      "channel %s %s: page %r, --json %r" %
                      (ch["channel"], key, got, ch[key]))
        # sorting: the "mean R" column, up then down
        heads = d.find_elements(By.CSS_SELECTOR, "#image-table thead th")
        names = [h.text.strip() for h in heads]
        i = names.index("mean R")
        button = heads[i].find_element(By.TAG_NAME, "button")
        button.click()

        def values():
            return [float(x) if x else float("-inf") for x in column(d, i)]
        v = values()
        check(v == sorted(v) and len(v) == 15 and v[-1] > 0.9,
              "sorted up by mean R: %s" % v)
        check(heads[i].get_attribute("aria-sort") == "ascending",
              "aria-sort says ascending")
        button.click()
        v = values()
        check(v == sorted(v, reverse=True), "sorted down by mean R: %s" % v)
        files = names.index("file")
        heads[files].find_element(By.TAG_NAME, "button").click()
        f = column(d, files)
        check(f == sorted(f), "sorted by file name")
        # filtering
        box = d.find_element(By.ID, "filter")
        box.send_keys("bright")
        f = column(d, files)
        check(len(f) == 1 and f[0].endswith("bright.png") and
              d.find_element(By.ID, "shown").text == "1",
              "the filter shows the matching row: %s" % f)
        box.clear()
        box.send_keys("failed")
        f = column(d, files)
        check(len(f) == 1 and f[0].endswith("broken.png"),
              "the filter finds the failed file by its note: %s" % f)
        d.execute_script("var b=document.getElementById('filter');"
                         "b.value='';b.dispatchEvent(new Event('input'));")
        check(len(column(d, files)) == 15, "the filter cleared")
        # light and dark; printed at A4's width
        check(contrast(d) >= 7, "light mode contrast %.1f" % contrast(d))
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {
            "features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        dark_bg = d.execute_script(
            "return getComputedStyle(document.body).backgroundColor")
        check(luminance(dark_bg) < 0.05 and contrast(d) >= 7,
              "dark mode: background %s, contrast %.1f" % (dark_bg,
                                                           contrast(d)))
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {
            "media": "print", "features": [
                {"name": "prefers-color-scheme", "value": "light"}]})
        # A4 less 12 mm margins: 186 mm at 96 px per inch
        width = int(186 / 25.4 * 96)
        d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": 1000, "deviceScaleFactor": 1,
            "mobile": False})
        wide = d.execute_script(
            "return [].slice.call(document.querySelectorAll('table'))"
            ".filter(function(t){return t.getBoundingClientRect().right > "
            "arguments[0] + 1;}).map(function(t){return t.id || "
            "t.className;});", width)
        check(not wide, "printed at A4's width no table is cut off: %s" % wide)
        pdf = d.execute_cdp_cmd("Page.printToPDF", {
            "paperWidth": 8.27, "paperHeight": 11.69, "printBackground": True})
        check(len(pdf.get("data", "")) > 1000, "the page prints to PDF")
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
        os.makedirs(artifacts, exist_ok=True)
        d.set_window_size(1100, 1400)
        d.execute_script("window.scrollTo(0, 0)")
        d.save_screenshot(os.path.join(artifacts, "report.png"))
        check(Image.open(os.path.join(artifacts, "report.png")).size[0] > 0,
              "the screenshot kept")

        # a 100,000-input run's page
        for k in range(3):
            Image.fromarray(((np.arange(48).reshape(4, 4, 3) * (k + 1)) %
                             256).astype(np.uint8)).save(
                os.path.join(tmp, "t%d.png" % k))
        with open(os.path.join(tmp, "list.txt"), "w") as f:
            f.write("".join("t%d.png\n" % (k % 3) for k in range(100000)))
        big = os.path.join(tmp, "big.html")
        t0 = time.time()
        r = subprocess.run([imgstat, "--dataset-only", "--files-from",
                            "list.txt", "--report", big], cwd=tmp,
                           capture_output=True, text=True)
        print("100,000 inputs: the run took %.1f s" % (time.time() - t0))
        size = os.path.getsize(big) if os.path.exists(big) else -1
        check(r.returncode == 0 and 0 < size < 2 * 1024 * 1024,
              "100,000 inputs: a page under 2 MB: %d bytes (%s)" %
              (size, r.stderr[-200:]))
        d.get_log("browser")
        t0 = time.time()
        d.get("file://" + big)
        wall = time.time() - t0
        load = d.execute_script(
            "var n=performance.getEntriesByType('navigation')[0];"
            "return n.loadEventEnd - n.startTime;")
        print("100,000 inputs: page of %d bytes loaded in %.0f ms (%.2f s "
              "with the driver)" % (size, load, wall))
        check(0 < load < 2000, "loaded in under 2 s: %.0f ms" % load)
        check(not [e for e in d.get_log("browser")
                   if e["level"] == "SEVERE"], "no console error (100,000)")
        says = d.find_element(By.ID, "table-says").text
        rows = d.execute_script(
            "return JSON.parse(document.getElementById('image-data')"
            ".textContent).length")
        check("2000 of the 100000 inputs" in says and rows == 2000 and
              len(d.find_elements(By.CSS_SELECTOR,
                                  "#image-table tbody tr")) == 100,
              "the page says what the table shows: %r, %d rows, 100 a "
              "page" % (says, rows))
        d.find_element(By.ID, "next").click()
        first = d.find_element(By.CSS_SELECTOR,
                               "#image-table tbody tr td").text
        check(d.find_element(By.ID, "page").text == "rows 101-200 of 2000"
              and first.isdigit(), "the next page")
        check("100000" in d.find_element(By.ID, "count-inputs").text,
              "every input counted")
    finally:
        d.quit()
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
