// A "copy" button on every code block of the onnx-relu site. For a Python console block
// (">>> " prompts) it copies the code without prompts and without the printed output, so that
// what is pasted runs; any other block is copied as it is.
document.addEventListener("DOMContentLoaded", () => {
  for (const block of document.querySelectorAll("div.highlight")) {
    const pre = block.querySelector("pre");
    if (!pre) continue;
    const button = document.createElement("button");
    button.className = "onnx-relu-copy";
    button.type = "button";
    button.textContent = "copy";
    button.title = "Copy to the clipboard";
    button.addEventListener("click", async () => {
      let text = pre.innerText;
      const lines = text.split("\n");
      if (lines.some((line) => line.startsWith(">>> "))) {
        text = lines
          .filter((line) => line.startsWith(">>> ") || line.startsWith("... "))
          .map((line) => line.slice(4))
          .join("\n");
      }
      try {
        await navigator.clipboard.writeText(text.replace(/\n+$/, "") + "\n");
        button.textContent = "copied";
      } catch (error) {
        button.textContent = "copy failed";
      }
      setTimeout(() => (button.textContent = "copy"), 1500);
    });
    block.appendChild(button);
  }
});
