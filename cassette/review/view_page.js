// cassette view: folds and unfolds long texts. It reads no recorded text: the page's markup was
// escaped when it was written, and this script only toggles classes and its own button labels.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var buttons = document.querySelectorAll("button.unfold");
  Array.prototype.forEach.call(buttons, function (button) {
    button.addEventListener("click", function () {
      var box = button.previousElementSibling;
      if (!box) {
        return;
      }
      var open = box.classList.toggle("open");
      button.textContent = open ? button.getAttribute("data-less") : button.getAttribute("data-more");
      button.setAttribute("aria-expanded", open ? "true" : "false");
    });
  });
})();
