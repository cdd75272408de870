// The FillPDF review editor: a box per field over each page; select, move, resize, draw,
// delete, rename, retype, group as radio, undo, save. Rects are kept in PDF user space
// (points, from the page's bottom left); each page's matrix maps them onto its picture.
"use strict";

(function () {
  const COLORS = {
    text: "#0066cc", date: "#008c82", checkbox: "#289628", radio: "#dc6e00",
    choice: "#8c3caa", signature: "#d21e28",
  };
  const KEYS = ["name", "type", "page", "rect", "label", "confidence", "required", "read_only",
    "multiline", "max_length", "comb", "options", "date_format"];
  const MIN_SIZE = 2; // points: a box never shrinks below this
  const token = document.querySelector('meta[name="fillpdf-review-token"]').content;

  let doc = null; // what /api/review gave: pages, schema, types
  let boxes = []; // one per widget: {id, name, type, page, rect, export?, ...}
  let selected = []; // ids, in the order they were selected
  const history = []; // earlier states of boxes, for undo
  let drawing = false;
  let nextId = 1;

  const $ = (selector, root) => (root || document).querySelector(selector);
  const $$ = (selector, root) => Array.from((root || document).querySelectorAll(selector));

  function status(text, isError) {
    const line = $("[data-status]");
    line.textContent = text;
    line.classList.toggle("error", Boolean(isError));
  }

  function withToken(url) {
    return token ? url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(token) : url;
  }

  function request(url, options) {
    const headers = Object.assign({}, (options && options.headers) || {});
    if (token) headers["X-Review-Token"] = token;
    return fetch(url, Object.assign({}, options || {}, { headers, credentials: "same-origin" }));
  }

  // ---------------------------------------------------------------- geometry

  function matrixOf(page) { return doc.pages[page].matrix; }

  function toPicture(page, x, y) {
    const [a, b, c, d, e, f] = matrixOf(page);
    return [a * x + c * y + e, b * x + d * y + f];
  }

  function toUser(page, X, Y) {
    const [a, b, c, d, e, f] = matrixOf(page);
    const det = a * d - b * c;
    const dx = X - e, dy = Y - f;
    return [(d * dx - c * dy) / det, (a * dy - b * dx) / det];
  }

  function round(v) { return Math.round(v * 1000) / 1000; }

  function pictureBox(page, rect) {
    const corners = [[rect[0], rect[1]], [rect[2], rect[3]], [rect[0], rect[3]], [rect[2], rect[1]]]
      .map(([x, y]) => toPicture(page, x, y));
    const xs = corners.map((p) => p[0]), ys = corners.map((p) => p[1]);
    return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
  }

  function userRect(page, box) {
    const a = toUser(page, box[0], box[1]), b = toUser(page, box[2], box[3]);
    return [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[0], b[0]), Math.max(a[1], b[1])]
      .map(round);
  }

  // A move of (dx, dy) points as the page shows it (right, down), in user space.
  function userDelta(page, dx, dy) {
    const scale = doc.scale;
    const o = toUser(page, 0, 0), p = toUser(page, dx * scale, dy * scale);
    return [p[0] - o[0], p[1] - o[1]];
  }

  // ---------------------------------------------------------------- the schema

  function boxesFrom(schema) {
    const made = [];
    for (const entry of schema) {
      const common = {};
      for (const key of KEYS) if (key in entry) common[key] = entry[key];
      if (entry.type === "radio" && Array.isArray(entry.widgets) && entry.widgets.length) {
        delete common.options;
        for (const w of entry.widgets) {
          made.push(Object.assign({}, common, {
            id: nextId++, page: w.page === undefined || w.page === null ? entry.page : w.page,
            rect: w.rect.slice(), export: String(w.export),
          }));
        }
      } else if (entry.type === "radio") {
        const options = entry.options || [];
        delete common.options;
        made.push(Object.assign({}, common, { id: nextId++, rect: entry.rect.slice(),
          export: options.length ? String(options[0]) : "" }));
      } else {
        made.push(Object.assign({}, common, { id: nextId++, rect: entry.rect.slice() }));
      }
    }
    return made;
  }

  function entryOf(box) {
    const entry = {};
    for (const key of KEYS) {
      if (box[key] === undefined || box[key] === null) continue;
      if (key === "date_format" && (box.type !== "date" || box[key] === "")) continue;
      if (key === "options" && box.type !== "choice") continue;
      entry[key] = Array.isArray(box[key]) ? box[key].slice() : box[key];
    }
    return entry;
  }

  // The schema `convert --schema` takes: a radio group is one entry listing its buttons.
  function schemaOf() {
    const entries = [];
    const groups = new Map();
    for (const box of boxes) {
      if (box.type !== "radio") { entries.push(entryOf(box)); continue; }
      let entry = groups.get(box.name);
      if (!entry) {
        entry = entryOf(box);
        delete entry.rect;
        delete entry.max_length;
        entry.widgets = [];
        groups.set(box.name, entry);
        entries.push(entry);
      }
      entry.widgets.push({ export: box.export || "", page: box.page, rect: box.rect.slice() });
    }
    return entries;
  }

  // ---------------------------------------------------------------- history

  function remember() {
    history.push(JSON.stringify(boxes));
    if (history.length > 500) history.shift();
    $('[data-action="undo"]').disabled = false;
  }

  function undo() {
    if (!history.length) return;
    boxes = JSON.parse(history.pop());
    const alive = new Set(boxes.map((b) => b.id));
    selected = selected.filter((id) => alive.has(id));
    $('[data-action="undo"]').disabled = history.length === 0;
    render();
    status("Undone.");
  }

  // ---------------------------------------------------------------- drawing the pages

  function render() {
    const twice = duplicateNames();
    for (const layer of $$("[data-layer]")) {
      const page = Number(layer.dataset.layer);
      layer.replaceChildren(...boxes.filter((b) => b.page === page).map((b) => boxElement(b, twice)));
      placeCaptions(layer);
    }
    inspect();
  }

  // Keep each caption on its page: above its box, down to the page's top edge (over the
  // box's top where there is not quite room), below the box where there is less than half a
  // caption's room; never past the left or right edge. A radio option's caption is centred over
  // its button, so the captions of a row of buttons sit side by side. All sizes are read
  // before any is written, so the page is laid out once.
  function placeCaptions(layer) {
    const width = layer.clientWidth;
    const captions = $$(".caption", layer);
    const sizes = captions.map((c) => {
      const r = c.getBoundingClientRect();
      return [r.width, r.height, c.parentElement.clientLeft];
    });
    captions.forEach((caption, i) => {
      const field = caption.parentElement;
      const left = parseFloat(field.style.left), top = parseFloat(field.style.top);
      const fieldWidth = parseFloat(field.style.width);
      // A caption is placed from inside its box's border; sizes are in the page's pixels.
      const [w, h, border] = [Math.min(sizes[i][0], width), sizes[i][1], sizes[i][2]];
      const wanted = field.dataset.type === "radio" ? left + (fieldWidth - w) / 2 : left;
      const at = Math.max(0, Math.min(wanted, width - w));
      caption.style.left = `${at - left - border}px`;
      caption.style.maxWidth = `${width}px`;
      const room = top + border; // above the caption's usual place, to the page's top
      const below = room < h / 2;
      caption.classList.toggle("below", below);
      caption.style.bottom = below || room >= h ? "" : `calc(100% - ${h - room}px)`;
    });
  }

  // Names that more than one field has (a radio group's buttons are one field).
  function duplicateNames() {
    const kinds = new Map();
    for (const b of boxes) {
      const seen = kinds.get(b.name) || { radio: 0, other: 0 };
      if (b.type === "radio") seen.radio = 1;
      else seen.other += 1;
      kinds.set(b.name, seen);
    }
    return new Set([...kinds].filter(([, k]) => k.radio + k.other > 1).map(([name]) => name));
  }

  // Another field that already has ``name``, or null: a radio button's own group is not one.
  function clashWith(box, name) {
    return boxes.find((b) => b.name === name && b.id !== box.id &&
      !(box.type === "radio" && b.type === "radio" && b.name === box.name)) || null;
  }

  function described(box) { return `the ${box.type} field on page ${box.page + 1}`; }

  function boxElement(box, twice) {
    const [x0, y0, x1, y1] = pictureBox(box.page, box.rect);
    const el = document.createElement("div");
    el.className = "field";
    el.dataset.field = box.name;
    el.dataset.id = String(box.id);
    el.dataset.type = box.type;
    if (box.type === "radio") el.dataset.export = box.export || "";
    el.tabIndex = 0;
    el.setAttribute("role", "button");
    const sure = box.confidence === undefined ? 1 : box.confidence;
    const low = sure < doc.low_confidence;
    const duplicate = twice.has(box.name);
    const option = box.type === "radio" ? `=${box.export}` : "";
    const notes = (low ? ", low confidence" : "") + (duplicate ? ", name used twice" : "");
    el.setAttribute("aria-label", `${box.name}${option} (${box.type}${notes})`);
    el.title = `${box.name}${option} (${box.type}, ${Math.round(sure * 100)}% sure${notes})`;
    el.classList.toggle("low", low);
    el.classList.toggle("duplicate", duplicate);
    el.classList.toggle("selected", selected.includes(box.id));
    el.style.left = `${x0}px`;
    el.style.top = `${y0}px`;
    el.style.width = `${Math.max(1, x1 - x0)}px`;
    el.style.height = `${Math.max(1, y1 - y0)}px`;
    el.style.setProperty("--color", COLORS[box.type] || "#5a5a5a");
    // A radio button's caption is its option; the group's name shows when it is selected.
    const caption = document.createElement("span");
    caption.className = "caption";
    const part = (className, text) => Object.assign(document.createElement("span"),
      { className, textContent: text });
    caption.append(part("name", box.name));
    if (option) caption.append(part("option", option));
    caption.append(part("sure", ` · ${Math.round(sure * 100)}%`));
    el.appendChild(caption);
    const handle = document.createElement("span");
    handle.className = "handle";
    handle.dataset.handle = "resize";
    el.appendChild(handle);
    return el;
  }

  function buildPages() {
    const holder = $("[data-pages]");
    holder.replaceChildren();
    for (const page of doc.pages) {
      const sheet = document.createElement("section");
      sheet.className = "sheet";
      sheet.dataset.page = String(page.index);
      sheet.setAttribute("aria-label", `Page ${page.index + 1}`);
      sheet.style.width = `${page.width}px`;
      sheet.style.height = `${page.height}px`;
      const img = document.createElement("img");
      img.src = withToken(`pages/${page.index}.png`);
      img.alt = `Page ${page.index + 1} of ${doc.name}`;
      img.width = page.width;
      img.height = page.height;
      img.draggable = false;
      const layer = document.createElement("div");
      layer.className = "layer";
      layer.dataset.layer = String(page.index);
      sheet.append(img, layer);
      holder.appendChild(sheet);
    }
  }

  function buildLegend() {
    $("[data-legend]").replaceChildren(...doc.types.map((type) => {
      const item = document.createElement("li");
      item.style.setProperty("--color", COLORS[type]);
      item.textContent = type;
      return item;
    }), Object.assign(document.createElement("li"), {
      className: "low", textContent: `dashed, yellow edge: less than ${Math.round(doc.low_confidence * 100)}% sure`,
    }), Object.assign(document.createElement("li"), {
      className: "duplicate", textContent: "red edge: a name another field has too",
    }));
    const select = $('[data-prop="type"]');
    select.replaceChildren(...doc.types.map((type) => Object.assign(
      document.createElement("option"), { value: type, textContent: type })));
  }

  // ---------------------------------------------------------------- the inspector

  function selectedBoxes() { return boxes.filter((b) => selected.includes(b.id)); }

  function inspect() {
    const chosen = selectedBoxes();
    const one = chosen.length === 1 ? chosen[0] : null;
    $("[data-props]").hidden = !one;
    $("[data-group-props]").hidden = chosen.length < 2;
    $("[data-hint]").hidden = chosen.length > 0;
    $('[data-action="delete"]').disabled = chosen.length === 0;
    const buttons = chosen.filter((b) => b.type === "checkbox" || b.type === "radio");
    $('[data-action="group"]').disabled = chosen.length < 2 || buttons.length !== chosen.length;
    if (chosen.length >= 2) {
      const group = $('[data-prop="group"]');
      if (document.activeElement !== group) group.value = suggestGroupName(chosen);
      checkName(group);
    }
    if (!one) return;
    const form = $("[data-props]");
    for (const input of $$("[data-prop]", form)) {
      const key = input.dataset.prop;
      if (document.activeElement === input) continue;
      if (input.type === "checkbox") input.checked = Boolean(one[key]);
      else if (key === "options") input.value = (one.options || []).join(", ");
      else input.value = one[key] === undefined || one[key] === null ? "" : String(one[key]);
    }
    for (const label of $$("[data-for]", form)) {
      label.hidden = !label.dataset.for.split(" ").includes(one.type);
    }
    const r = one.rect;
    $("[data-where]").textContent =
      `Page ${one.page + 1}, [${r.map((v) => v.toFixed(1)).join(", ")}] pt`;
    checkName($('[data-prop="name"]'));
  }

  // What is wrong with the name typed in ``input`` (empty, or another field's), or "".
  function nameProblem(input) {
    const name = input.value.trim();
    if (!name) return "A field needs a name.";
    const chosen = selectedBoxes();
    if (input.dataset.prop === "group") {
      const inGroup = (b) => selected.includes(b.id) ||
        (b.type === "radio" && chosen.some((c) => c.type === "radio" && c.name === b.name));
      const other = boxes.find((b) => b.name === name && !inGroup(b));
      return other ? `${described(other)} is already named "${name}"; names must be unique.` : "";
    }
    if (chosen.length !== 1) return "";
    const other = clashWith(chosen[0], name);
    return other ? `${described(other)} is already named "${name}"; names must be unique.` : "";
  }

  // Flag the name as it is typed: the input, the message under it, and the other box.
  function checkName(input) {
    const problem = nameProblem(input);
    const note = input.closest("form").querySelector("[data-name-problem]");
    note.textContent = problem ? problem.charAt(0).toUpperCase() + problem.slice(1) : "";
    note.hidden = !problem;
    input.setAttribute("aria-invalid", problem ? "true" : "false");
    const name = input.value.trim();
    for (const el of $$(".field")) {
      el.classList.toggle("clash", Boolean(problem) && el.dataset.field === name &&
        !selected.includes(Number(el.dataset.id)));
    }
    return problem;
  }

  function suggestGroupName(chosen) {
    const radio = chosen.find((b) => b.type === "radio");
    return radio ? radio.name : `${chosen[0].name}_choice`;
  }

  function applyProp(input) {
    const chosen = selectedBoxes();
    if (chosen.length !== 1) return;
    const box = chosen[0];
    const key = input.dataset.prop;
    let value;
    if (input.type === "checkbox") value = input.checked;
    else if (key === "options") value = input.value.split(",").map((s) => s.trim()).filter(Boolean);
    else if (key === "max_length") value = input.value === "" ? null : Number(input.value);
    else value = input.value;
    if (key === "name") {
      value = value.trim();
      const problem = checkName(input);
      if (problem) { status(`Not renamed: ${problem}`, true); return; }
    }
    if (JSON.stringify(box[key]) === JSON.stringify(value)) return;
    remember();
    if (key === "name" && box.type === "radio") {
      for (const b of boxes) if (b.type === "radio" && b.name === box.name) b.name = value;
    } else if (key === "type") {
      retype(box, value);
    } else {
      box[key] = value;
    }
    render();
    status(`${box.name}: ${key} changed.`);
  }

  function retype(box, type) {
    const old = box.type;
    box.type = type;
    if (type !== "text") { box.multiline = false; box.comb = false; }
    if (type !== "text" && type !== "date") box.max_length = null;
    if (type !== "date") delete box.date_format;
    if (type === "choice" && !(box.options && box.options.length)) box.options = ["Option 1", "Option 2"];
    if (type === "radio" && old !== "radio") box.export = box.export || "yes";
    if (type !== "radio") delete box.export;
  }

  // ---------------------------------------------------------------- selection and edits

  function select(id, add) {
    if (add) {
      selected = selected.includes(id) ? selected.filter((s) => s !== id) : selected.concat([id]);
    } else {
      selected = [id];
    }
    render();
  }

  function removeSelected() {
    if (!selected.length) return;
    remember();
    const gone = selectedBoxes().map((b) => b.name);
    boxes = boxes.filter((b) => !selected.includes(b.id));
    selected = [];
    render();
    status(`Deleted ${gone.join(", ")}.`);
  }

  function nudge(dx, dy) {
    const chosen = selectedBoxes();
    if (!chosen.length) return;
    remember();
    for (const box of chosen) {
      const [ux, uy] = userDelta(box.page, dx, dy);
      box.rect = [box.rect[0] + ux, box.rect[1] + uy, box.rect[2] + ux, box.rect[3] + uy].map(round);
    }
    render();
  }

  function group() {
    const chosen = selectedBoxes();
    if (chosen.length < 2) return;
    const name = $('[data-prop="group"]').value.trim();
    if (!name) { status("Give the radio group a name.", true); return; }
    const problem = checkName($('[data-prop="group"]'));
    if (problem) { status(`Not grouped: ${problem}`, true); return; }
    remember();
    const taken = new Set();
    for (const box of chosen) {
      let option = box.type === "radio" ? box.export : box.name;
      option = option || "option";
      let unique = option, n = 2;
      while (taken.has(unique)) unique = `${option}_${n++}`;
      taken.add(unique);
      Object.assign(box, { name, type: "radio", export: unique, multiline: false, comb: false,
        max_length: null });
    }
    render();
    status(`Grouped ${chosen.length} boxes as radio group ${name}.`);
  }

  function uniqueName(base) {
    const names = new Set(boxes.map((b) => b.name));
    let n = 1;
    while (names.has(`${base}_${n}`)) n += 1;
    return `${base}_${n}`;
  }

  // ---------------------------------------------------------------- the mouse

  let gesture = null; // {kind: move|resize|draw, page, start: [X, Y], ...}

  function pointIn(sheet, event) {
    const r = sheet.getBoundingClientRect();
    return [event.clientX - r.left, event.clientY - r.top];
  }

  function onPointerDown(event) {
    if (event.button !== 0) return;
    const sheet = event.target.closest(".sheet");
    if (!sheet) return;
    // The keys act on the boxes now: an edit left in a panel input is applied (change).
    if (typing(document.activeElement)) document.activeElement.blur();
    const page = Number(sheet.dataset.page);
    const start = pointIn(sheet, event);
    const fieldEl = event.target.closest(".field");
    if (drawing && !fieldEl) {
      const ghost = document.createElement("div");
      ghost.className = "ghost";
      sheet.querySelector(".layer").appendChild(ghost);
      gesture = { kind: "draw", sheet, page, start, ghost };
    } else if (fieldEl) {
      const id = Number(fieldEl.dataset.id);
      if (event.shiftKey || event.ctrlKey || event.metaKey) { select(id, true); return; }
      if (!selected.includes(id)) select(id, false);
      const kind = event.target.dataset.handle === "resize" ? "resize" : "move";
      gesture = { kind, sheet, page, start, id, before: JSON.stringify(boxes),
        original: boxes.find((b) => b.id === id).rect.slice(), moved: false };
    } else {
      selected = [];
      render();
      return;
    }
    event.preventDefault();
  }

  function onPointerMove(event) {
    if (!gesture) return;
    const [X, Y] = pointIn(gesture.sheet, event);
    const dX = X - gesture.start[0], dY = Y - gesture.start[1];
    if (gesture.kind === "draw") {
      const g = gesture.ghost;
      g.style.left = `${Math.min(X, gesture.start[0])}px`;
      g.style.top = `${Math.min(Y, gesture.start[1])}px`;
      g.style.width = `${Math.abs(dX)}px`;
      g.style.height = `${Math.abs(dY)}px`;
      return;
    }
    if (!gesture.moved && Math.abs(dX) + Math.abs(dY) < 2) return;
    gesture.moved = true;
    const box = boxes.find((b) => b.id === gesture.id);
    const pic = pictureBox(gesture.page, gesture.original);
    const min = MIN_SIZE * doc.scale;
    const next = gesture.kind === "move"
      ? [pic[0] + dX, pic[1] + dY, pic[2] + dX, pic[3] + dY]
      : [pic[0], pic[1], Math.max(pic[0] + min, pic[2] + dX), Math.max(pic[1] + min, pic[3] + dY)];
    box.rect = userRect(gesture.page, next);
    render();
  }

  function onPointerUp(event) {
    if (!gesture) return;
    const done = gesture;
    gesture = null;
    if (done.kind === "draw") {
      done.ghost.remove();
      const [X, Y] = pointIn(done.sheet, event);
      const pic = [Math.min(X, done.start[0]), Math.min(Y, done.start[1]),
        Math.max(X, done.start[0]), Math.max(Y, done.start[1])];
      if (pic[2] - pic[0] < MIN_SIZE * doc.scale || pic[3] - pic[1] < MIN_SIZE * doc.scale) return;
      remember();
      const box = { id: nextId++, name: uniqueName("field"), type: "text", page: done.page,
        rect: userRect(done.page, pic), confidence: 1 };
      boxes.push(box);
      selected = [box.id];
      setDrawing(false);
      render();
      status(`Drew ${box.name}; name it in the panel.`);
      const name = $('[data-prop="name"]');
      name.focus();
      name.select();
      return;
    }
    if (done.moved) {
      history.push(done.before);
      $('[data-action="undo"]').disabled = false;
      const box = boxes.find((b) => b.id === done.id);
      status(`${box.name}: ${done.kind === "move" ? "moved" : "resized"}.`);
    }
  }

  function setDrawing(on) {
    drawing = on;
    const button = $('[data-action="draw"]');
    button.setAttribute("aria-pressed", on ? "true" : "false");
    document.body.classList.toggle("drawing", on);
  }

  // ---------------------------------------------------------------- the keyboard

  function typing(target) {
    return target && (target.tagName === "INPUT" || target.tagName === "SELECT" ||
      target.tagName === "TEXTAREA");
  }

  function onKeyDown(event) {
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "z" && !typing(event.target)) {
      event.preventDefault();
      undo();
      return;
    }
    if (typing(event.target)) {
      if (event.key === "Enter") {
        event.preventDefault();
        if (event.target.dataset.prop === "group") group();
        else if (event.target.dataset.prop) applyProp(event.target);
      }
      return;
    }
    const step = event.shiftKey ? 10 : 1;
    const moves = { ArrowLeft: [-step, 0], ArrowRight: [step, 0], ArrowUp: [0, -step], ArrowDown: [0, step] };
    if (event.key in moves && selected.length) {
      event.preventDefault();
      nudge(...moves[event.key]);
    } else if ((event.key === "Delete" || event.key === "Backspace") && selected.length) {
      event.preventDefault();
      removeSelected();
    } else if (event.key === "Escape") {
      setDrawing(false);
      selected = [];
      render();
    } else if (event.key === "Enter" && event.target.classList.contains("field")) {
      select(Number(event.target.dataset.id), event.shiftKey);
    }
  }

  // ---------------------------------------------------------------- saving

  async function save(build) {
    status(build ? "Saving and building..." : "Saving...");
    let response;
    try {
      response = await request("api/save", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ schema: schemaOf(), build }),
      });
    } catch (err) {
      status(`Not saved: the editor's server can't be reached (${err.message}).`, true);
      return;
    }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = body.error || {};
      status(`Not saved: ${error.message || response.statusText}`, true);
      const entry = typeof error.index === "number" ? schemaOf()[error.index] : null;
      focusName(error.name || (entry && entry.name));
      return;
    }
    status(`Saved ${body.fields} fields to ${body.saved}` + (body.built ? `; built ${body.built}.` : "."));
    document.body.dataset.saved = String(Date.now());
  }

  // Select the boxes of the field an error names (all of them, for a name used twice).
  function focusName(name) {
    if (!name) return;
    selected = boxes.filter((b) => b.name === name).map((b) => b.id);
    render();
    const el = $(`.field[data-id="${selected[0]}"]`);
    if (el) el.scrollIntoView({ block: "center" });
  }

  // ---------------------------------------------------------------- start

  function wire() {
    document.addEventListener("pointerdown", onPointerDown);
    document.addEventListener("pointermove", onPointerMove);
    document.addEventListener("pointerup", onPointerUp);
    document.addEventListener("keydown", onKeyDown);
    $('[data-action="draw"]').addEventListener("click", () => setDrawing(!drawing));
    $('[data-action="group"]').addEventListener("click", group);
    $('[data-action="delete"]').addEventListener("click", removeSelected);
    $('[data-action="undo"]').addEventListener("click", undo);
    $('[data-action="save"]').addEventListener("click", () => save(false));
    $('[data-action="build"]').addEventListener("click", () => save(true));
    for (const input of $$("[data-props] [data-prop]")) {
      input.addEventListener("change", () => applyProp(input));
    }
    for (const input of $$('[data-prop="name"], [data-prop="group"]')) {
      input.addEventListener("input", () => checkName(input));
    }
    for (const form of $$("form")) form.addEventListener("submit", (e) => e.preventDefault());
  }

  async function start() {
    wire();
    const response = await request("api/review");
    if (!response.ok) {
      const body = await response.json().catch(() => ({}));
      status((body.error && body.error.message) || `The review could not load (${response.status}).`, true);
      return;
    }
    doc = await response.json();
    boxes = boxesFrom(doc.schema);
    buildPages();
    buildLegend();
    render();
    const low = boxes.filter((b) => (b.confidence === undefined ? 1 : b.confidence) < doc.low_confidence);
    const twice = duplicateNames().size;
    status(`${boxes.length} boxes on ${doc.pages.length} page(s); ${low.length} marked for a closer look` +
      (twice ? `; ${twice} name(s) used by more than one field.` : "."));
    document.body.dataset.ready = "true";
  }

  document.addEventListener("DOMContentLoaded", () => {
    start().catch((err) => status(`The editor failed to start: ${err.message}`, true));
  });
})();
