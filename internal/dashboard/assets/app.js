// capsuled dashboard: small progressive enhancements. Every page works
// without this file; with it, copy buttons work and uploads show progress.
"use strict";

function copyFrom(id, button) {
  var el = document.getElementById(id);
  if (!el) return;
  var text = "value" in el && el.tagName !== "PRE" ? el.value : el.textContent;
  var status = button.parentElement.parentElement.querySelector(".copy-status") ||
    button.parentElement.querySelector(".copy-status");
  function done(ok) {
    if (status) status.textContent = ok ? "Copied to the clipboard." : "Select the text and copy it yourself.";
  }
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(false); });
    return;
  }
  if (el.select) { el.select(); }
  try { done(document.execCommand("copy")); } catch (e) { done(false); }
}

function enhanceUpload(form) {
  var box = form.querySelector(".upload-progress");
  var bar = form.querySelector("progress");
  var text = form.querySelector(".upload-text");
  var button = form.querySelector("button[type=submit]");
  form.addEventListener("submit", function (ev) {
    if (!window.XMLHttpRequest || !window.FormData) return;
    ev.preventDefault();
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    box.hidden = false;
    bar.value = 0;
    text.textContent = "Uploading…";
    button.disabled = true;
    xhr.upload.addEventListener("progress", function (e) {
      if (e.lengthComputable) {
        var pct = Math.round(e.loaded / e.total * 100);
        bar.value = pct;
        text.textContent = pct + "% uploaded";
      }
    });
    xhr.addEventListener("load", function () {
      if (xhr.status < 400) {
        bar.value = 100;
        text.textContent = "Uploaded.";
        window.location.assign(xhr.responseURL || form.action);
        return;
      }
      button.disabled = false;
      var msg = "The upload failed (" + xhr.status + ").";
      try {
        var doc = new DOMParser().parseFromString(xhr.responseText, "text/html");
        var err = doc.querySelector(".error");
        if (err) msg = err.textContent;
      } catch (e) { /* keep the generic message */ }
      text.textContent = msg;
    });
    xhr.addEventListener("error", function () {
      button.disabled = false;
      text.textContent = "The upload failed: the server could not be reached.";
    });
    xhr.send(new FormData(form));
  });
}

document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("button[data-copy]").forEach(function (b) {
    b.addEventListener("click", function () { copyFrom(b.getAttribute("data-copy"), b); });
  });
  document.querySelectorAll("form[data-upload]").forEach(enhanceUpload);
});
