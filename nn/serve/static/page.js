// The draw-a-digit page: strokes on a canvas, sent as a PNG to POST /classify (debounced while
// drawing), the top-K shown as bars, the 28x28 input the network received drawn from the answer's
// "input", the Grad-CAM heatmap over it when asked for. Everything comes from this service.
"use strict";

const pad = document.getElementById("pad");
const ink = pad.getContext("2d");
const bars = document.getElementById("bars");
const statusLine = document.getElementById("status");
const modelSelect = document.getElementById("model");
const explainBox = document.getElementById("explain");
const inputView = document.getElementById("input");
const heatmapView = document.getElementById("heatmap");
const heatmapCaption = document.getElementById("heatmap-caption");
const MOST_BARS = 10;  // every class of a digit model; the first 10 of a larger one
const DEBOUNCE_MS = 120;
let classCounts = {};  // model name -> number of classes, from /models

let drawing = false;
let hasInk = false;
let last = null;
let timer = null;
let inFlight = false;
let again = false;
let drawingNumber = 0;  // bumped by Clear: an answer about an earlier drawing is not shown
let dropped = null;  // a dropped or chosen image file, sent as it is until one draws over it

function clearPad() {
  clearTimeout(timer);
  timer = null;
  settle(!inFlight);
  again = false;
  drawingNumber += 1;
  dropped = null;
  ink.fillStyle = "#000";
  ink.fillRect(0, 0, pad.width, pad.height);
  hasInk = false;
  bars.replaceChildren();
  for (const view of [inputView, heatmapView]) {
    view.getContext("2d").clearRect(0, 0, view.width, view.height);
  }
  say("Draw a digit.");
}

function say(text, isError = false) {
  statusLine.textContent = text;
  statusLine.classList.toggle("error", isError);
}

function point(event) {
  const box = pad.getBoundingClientRect();
  return [(event.clientX - box.left) * pad.width / box.width,
          (event.clientY - box.top) * pad.height / box.height];
}

function stroke(from, to) {
  ink.strokeStyle = "#fff";
  ink.lineWidth = pad.width / 14;
  ink.lineCap = "round";
  ink.lineJoin = "round";
  ink.beginPath();
  ink.moveTo(...from);
  ink.lineTo(...to);
  ink.stroke();
  hasInk = true;
  dropped = null;  // drawn over: the pad is the image now
}

pad.addEventListener("pointerdown", (event) => {
  drawing = true;
  pad.setPointerCapture(event.pointerId);
  last = point(event);
  stroke(last, last);
  schedule();
});
pad.addEventListener("pointermove", (event) => {
  if (!drawing) return;
  const next = point(event);
  stroke(last, next);
  last = next;
  schedule();
});
for (const name of ["pointerup", "pointercancel"]) {
  pad.addEventListener(name, () => {
    if (!drawing) return;
    drawing = false;
    schedule(0);
  });
}

// Classify DEBOUNCE_MS after the last change, one request at a time: a change made while one is
// under way asks for another when it returns.
function schedule(delay = DEBOUNCE_MS) {
  clearTimeout(timer);
  timer = setTimeout(classify, delay);
  settle(false);
}

// <body data-settled="yes"> once what is shown answers the drawing as it stands (nothing is
// waiting to be asked or under way): what a test reads the page by.
function settle(settled) {
  document.body.dataset.settled = settled ? "yes" : "no";
}

async function classify() {
  timer = null;
  if (!hasInk) {
    settle(!inFlight);
    return;
  }
  if (inFlight) {
    again = true;
    return;
  }
  inFlight = true;
  const asked = drawingNumber;
  try {
    // a dropped file goes as it is: the service detects its background and crops it itself
    const blob = dropped || await new Promise((resolve) => pad.toBlob(resolve, "image/png"));
    const classes = classCounts[modelSelect.value] || MOST_BARS;
    const query = new URLSearchParams({
      top_k: Math.min(MOST_BARS, classes), explain: explainBox.checked ? 1 : 0, show_input: 1,
    });
    if (modelSelect.value) query.set("model", modelSelect.value);
    const reply = await fetch(`/classify?${query}`, {
      method: "POST", body: blob, headers: {"Content-Type": blob.type || "image/png"},
    });
    const answer = await reply.json();
    if (asked !== drawingNumber) return;  // cleared meanwhile
    if (!reply.ok) {
      say(`${reply.status}: ${answer.detail}`, true);
      if (reply.status === 501 && explainBox.checked) {  // no Grad-CAM: classify without it
        heatmapCaption.textContent = "Grad-CAM not available here";
        explainBox.checked = false;
        again = true;
      }
      return;
    }
    show(answer);
  } catch (error) {
    say(`The service did not answer: ${error}`, true);
  } finally {
    inFlight = false;
    if (again) {
      again = false;
      schedule(0);
    } else if (timer === null) {
      settle(true);
    }
  }
}

function show(answer) {
  bars.replaceChildren(...answer.top.map((entry) => {
    const row = document.createElement("li");
    row.dataset.class = entry.class;
    row.dataset.probability = entry.probability;
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = entry.class;
    const track = document.createElement("span");
    track.className = "track";
    const fill = document.createElement("span");
    fill.className = "fill";
    fill.style.width = `${(100 * entry.probability).toFixed(1)}%`;
    fill.style.display = "block";
    track.append(fill);
    const value = document.createElement("span");
    value.className = "value";
    value.textContent = `${(100 * entry.probability).toFixed(1)}%`;
    row.append(name, track, value);
    return row;
  }));
  say(`${answer.model} on ${answer.tier}: ${answer.milliseconds.toFixed(1)} ms, ` +
      `in a batch of ${answer.batch_size}`);
  drawGray(inputView, answer.input);
  if (answer.heatmap) {
    drawHeatmap(heatmapView, answer.input, answer.heatmap);
    heatmapCaption.textContent = "Grad-CAM of the top class";
  } else {
    heatmapView.getContext("2d").clearRect(0, 0, heatmapView.width, heatmapView.height);
  }
}

// rows: H lists of W values in [0, 1] (gray), or of [r, g, b] (a colour model's input)
function drawGray(view, rows) {
  paint(view, rows, (value) => (Array.isArray(value) ? value : [value, value, value]));
}

function drawHeatmap(view, rows, heat) {
  paint(view, rows, (value, y, x) => {
    const gray = Array.isArray(value) ? value[0] : value;
    const h = heat[y][x];
    return [0.5 * gray + 0.5 * h, 0.5 * gray + 0.5 * Math.max(0, 2 * h - 1), 0.5 * gray];
  });
}

function paint(view, rows, color) {
  view.width = rows[0].length;
  view.height = rows.length;
  const context = view.getContext("2d");
  const image = context.createImageData(view.width, view.height);
  rows.forEach((row, y) => row.forEach((value, x) => {
    const [r, g, b] = color(value, y, x);
    const at = 4 * (y * view.width + x);
    image.data.set([255 * r, 255 * g, 255 * b, 255], at);
  }));
  context.putImageData(image, 0, 0);
}

// A dropped or chosen image is shown on the pad, fitted, and sent as it is.
function loadImage(file) {
  if (!file || !["image/png", "image/jpeg"].includes(file.type)) {
    say("Drop a PNG or JPEG image.", true);
    return;
  }
  const image = new Image();
  image.onload = () => {
    clearPad();
    const scale = Math.min(pad.width / image.width, pad.height / image.height);
    const width = image.width * scale;
    const height = image.height * scale;
    ink.drawImage(image, (pad.width - width) / 2, (pad.height - height) / 2, width, height);
    URL.revokeObjectURL(image.src);
    hasInk = true;
    dropped = file;
    schedule(0);
  };
  image.onerror = () => say("That file is not an image this browser can read.", true);
  image.src = URL.createObjectURL(file);
}

pad.addEventListener("dragover", (event) => {
  event.preventDefault();
  pad.classList.add("dragging");
});
pad.addEventListener("dragleave", () => pad.classList.remove("dragging"));
pad.addEventListener("drop", (event) => {
  event.preventDefault();
  pad.classList.remove("dragging");
  loadImage(event.dataTransfer.files[0]);
});
document.getElementById("file").addEventListener("change", (event) => {
  loadImage(event.target.files[0]);
});
document.getElementById("clear").addEventListener("click", clearPad);
modelSelect.addEventListener("change", () => schedule(0));
explainBox.addEventListener("change", () => schedule(0));

async function loadModels() {
  try {
    const reply = await fetch("/models");
    const listing = await reply.json();
    modelSelect.replaceChildren(...listing.models.map((model) => {
      const option = document.createElement("option");
      option.value = model.name;
      option.textContent = `${model.name}${model.int8 ? " (int8)" : ""}`;
      return option;
    }));
    classCounts = Object.fromEntries(listing.models.map((m) => [m.name, m.classes.length]));
    modelSelect.value = listing.default;
    say(`Draw a digit. Models on ${listing.tier}: ${listing.models.length}.`);
  } catch (error) {
    say(`Cannot list the models: ${error}`, true);
  }
}

clearPad();
loadModels();
