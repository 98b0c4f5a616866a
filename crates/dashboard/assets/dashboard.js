// tradeterm dashboard: the one script. Every page works without it; it adds
// copy buttons and refreshes the live parts of a page without a reload.
"use strict";

(function () {
  function announce(text) {
    var region = document.getElementById("announce");
    if (!region) return;
    region.textContent = "";
    window.setTimeout(function () { region.textContent = text; }, 50);
  }

  // Copy buttons: <button data-copy="ID"> copies the value (inputs) or the
  // text (other elements) of the element with that id.
  function copyFrom(button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target) return;
    var text = "value" in target && typeof target.value === "string" ? target.value : target.textContent;
    var done = function () {
      var label = button.textContent;
      button.textContent = "Copied";
      announce("Copied to the clipboard");
      window.setTimeout(function () { button.textContent = label; }, 1500);
    };
    var fallback = function () {
      if (typeof target.select === "function") {
        target.select();
      } else {
        var range = document.createRange();
        range.selectNodeContents(target);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
      }
      try {
        if (document.execCommand("copy")) { done(); return; }
      } catch (e) { /* the text stays selected for a manual copy */ }
      announce("Selected: press Ctrl+C to copy");
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, fallback);
    } else {
      fallback();
    }
  }

  // Live parts: <div data-refresh="URL" data-every="MS"> is replaced by the
  // fragment at URL every MS milliseconds (paused while the tab is hidden).
  // A 401 means the session ended: reloading leads to the sign-in page.
  function refresher(region) {
    var url = region.getAttribute("data-refresh");
    var every = Math.max(1000, parseInt(region.getAttribute("data-every"), 10) || 5000);
    var busy = false;
    function tick() {
      if (busy || document.hidden) return;
      busy = true;
      region.setAttribute("aria-busy", "true");
      fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" }, cache: "no-store" })
        .then(function (response) {
          if (response.status === 401) { window.location.reload(); return null; }
          return response.ok ? response.text() : null;
        })
        .then(function (html) {
          if (html !== null && html !== undefined && html !== region.innerHTML) {
            var focused = document.activeElement && region.contains(document.activeElement)
              ? document.activeElement.getAttribute("href") : null;
            region.innerHTML = html;
            if (focused) {
              var again = region.querySelector('a[href="' + focused.replace(/"/g, "") + '"]');
              if (again) again.focus();
            }
          }
          region.setAttribute("data-updated", new Date().toISOString());
        })
        .catch(function () { /* offline for a moment: the next tick tries again */ })
        .then(function () { busy = false; region.removeAttribute("aria-busy"); });
    }
    window.setInterval(tick, every);
    document.addEventListener("visibilitychange", function () { if (!document.hidden) tick(); });
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button[data-copy]") : null;
    if (button) { event.preventDefault(); copyFrom(button); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    var regions = document.querySelectorAll("[data-refresh]");
    for (var i = 0; i < regions.length; i++) refresher(regions[i]);
  });
})();
