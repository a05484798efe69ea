// gym-swe view's page script (gym_swe/rollout/view.py): no library, nothing fetched. Episodes' bodies and
// token data are JSON in the page, drawn only when an episode (or its token view) is opened.
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('gym-swe-data').textContent);
  var episodes = Array.prototype.slice.call(document.querySelectorAll('details.episode'));
  var search = document.getElementById('search');
  var matches = document.getElementById('matches');
  var texts = {};  // episode index -> its searchable text, lower case (made on the first search)
  var query = '';

  function indexOf(episode) { return Number(episode.dataset.episode); }

  // -- bodies ------------------------------------------------------------------------------------------
  function drawBody(episode) {
    if (episode.dataset.drawn) return;
    episode.dataset.drawn = '1';
    var html = data.bodies[indexOf(episode)];
    var body = episode.querySelector('.body');
    body.innerHTML = html === null
      ? '<p class="note">Left out of this page: its size budget was spent (see the note at the top).</p>'
      : html;
    if (query) highlight(body, query);
  }

  // -- the token view ----------------------------------------------------------------------------------
  function expand(runs, length, fill) {  // [[start, end], ...] or [[start, [values]], ...] -> per position
    var out = new Array(length).fill(fill === undefined ? 0 : fill);
    runs.forEach(function (run) {
      if (Array.isArray(run[1])) run[1].forEach(function (v, k) { out[run[0] + k] = v; });
      else for (var p = run[0]; p < run[1]; p++) out[p] = 1;
    });
    return out;
  }

  function marker(text, kind) {
    var span = document.createElement('span');
    span.className = 'mark' + (kind ? ' ' + kind : '');
    span.textContent = text;
    return span;
  }

  function drawTokens(view, tokens) {
    if (view.dataset.drawn) return;
    view.dataset.drawn = '1';
    if (!tokens) {
      view.textContent = 'Token data left out of this page: its size budget was spent (see the note at the top).';
      return;
    }
    var ids = tokens.ids, n = ids.length;
    var mask = expand(tokens.mask, n, 0), lp = expand(tokens.lp, n, null);
    var starts = {}, ends = {}, segments = {};
    tokens.turns.forEach(function (turn, k) {
      starts[turn[0]] = k;
      if (turn[1] > 0) ends[turn[0] + turn[1] - 1] = k;
    });
    tokens.segments.forEach(function (start, k) { segments[start] = k + 2; });
    var decoded = Object.keys(data.vocab).length > 0;
    var legend = document.createElement('div');
    legend.className = 'legend';
    legend.textContent = 'Dark: loss mask 1 (trained on); grey: loss mask 0 (prompt, template, tool results). ' +
      'Sampled tokens are shaded by the probability the model gave them (red: unlikely, green: likely); hover ' +
      'a token for its id, log-probability and mask. ' + (decoded ? '' : 'Ids shown: give --tokenizer to decode. ') +
      'Entropy is not recorded: a trajectory keeps the sampled token\'s log-probability only.';
    var out = document.createDocumentFragment();
    out.appendChild(legend);
    out.appendChild(marker('prompt', ''));
    for (var p = 0; p < n; p++) {
      if (segments[p] !== undefined) out.appendChild(marker('segment ' + segments[p] + ': the harness rewrote its history', 'segment'));
      if (starts[p] !== undefined) out.appendChild(marker('turn ' + (starts[p] + 1), ''));
      var id = ids[p], text = data.vocab[id];
      var span = document.createElement('span');
      span.className = 'tk m' + mask[p] + (text === undefined ? ' id' : '');
      span.textContent = text === undefined ? String(id) + ' ' : text.replace(/\n/g, '\u21b5\n');
      var title = 'id ' + id + ' \u00b7 loss mask ' + mask[p];
      if (lp[p] !== null) {
        var prob = Math.exp(lp[p]);
        title += ' \u00b7 logprob ' + lp[p].toFixed(3) + ' (p ' + prob.toFixed(3) + ')';
        span.style.background = 'hsl(' + Math.round(120 * prob) + ', 75%, 86%)';
      }
      span.title = title;
      out.appendChild(span);
      if (ends[p] !== undefined) {
        var turn = tokens.turns[ends[p]];
        if (turn[2] === 'length') out.appendChild(marker('\u2702 turn ' + (ends[p] + 1) + ' cut at length (max_tokens)', 'cut'));
        else out.appendChild(marker('end of turn ' + (ends[p] + 1) + ': ' + (turn[2] || '?'), ''));
        if (turn[3] > 0) out.appendChild(marker('template and tool results: ' + turn[3] + ' tokens', ''));
      }
    }
    view.appendChild(out);
  }

  // Bodies and token views are drawn when opened (toggle does not bubble: listen in the capture phase).
  document.addEventListener('toggle', function (event) {
    var target = event.target;
    if (!target.open) return;
    if (target.classList.contains('episode')) drawBody(target);
    else if (target.classList.contains('tokens')) {
      var episode = target.closest('details.episode');
      drawTokens(target.querySelector('.tokenview'), data.tokens[indexOf(episode)]);
    }
  }, true);

  // -- search and the outcome filter -------------------------------------------------------------------
  function textOf(episode) {
    var i = indexOf(episode);
    if (texts[i] === undefined) {
      var template = document.createElement('template');  // inert: parsed, never shown or run
      template.innerHTML = data.bodies[i] || '';
      texts[i] = (episode.querySelector('summary').textContent + '\n' + template.content.textContent).toLowerCase();
    }
    return texts[i];
  }

  function unhighlight(root) {
    root.querySelectorAll('mark').forEach(function (mark) {
      var parent = mark.parentNode;
      parent.replaceChild(document.createTextNode(mark.textContent), mark);
      parent.normalize();
    });
  }

  function highlight(root, q) {
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT), found = [], node;
    while ((node = walker.nextNode())) {
      if (node.parentNode.closest('.tokenview')) continue;
      if (node.nodeValue.toLowerCase().indexOf(q) >= 0) found.push(node);
    }
    found.forEach(function (textNode) {
      var value = textNode.nodeValue, lower = value.toLowerCase(), at = 0, k;
      var out = document.createDocumentFragment();
      while ((k = lower.indexOf(q, at)) >= 0) {
        out.appendChild(document.createTextNode(value.slice(at, k)));
        var mark = document.createElement('mark');
        mark.textContent = value.slice(k, k + q.length);
        out.appendChild(mark);
        at = k + q.length;
      }
      out.appendChild(document.createTextNode(value.slice(at)));
      textNode.parentNode.replaceChild(out, textNode);
    });
  }

  function apply() {
    var checked = document.querySelector('input[name=show]:checked');
    var show = checked ? checked.value : 'all';
    var visible = 0;
    episodes.forEach(function (episode) {
      var shown = (show === 'all' || episode.dataset.outcome === show) && (!query || textOf(episode).indexOf(query) >= 0);
      episode.style.display = shown ? '' : 'none';
      if (shown) visible++;
      var body = episode.querySelector('.body');
      if (episode.dataset.drawn) { unhighlight(body); if (query && shown) highlight(body, query); }
    });
    document.querySelectorAll('.group, section.file').forEach(function (box) {
      var any = Array.prototype.some.call(box.querySelectorAll('details.episode'), function (e) { return e.style.display !== 'none'; });
      box.style.display = any ? '' : 'none';
    });
    matches.textContent = (query || show !== 'all') ? visible + ' of ' + episodes.length + ' episodes' : '';
  }

  document.querySelectorAll('input[name=show]').forEach(function (input) { input.addEventListener('change', apply); });
  var timer = null;
  search.addEventListener('input', function () {
    clearTimeout(timer);
    timer = setTimeout(function () { query = search.value.trim().toLowerCase(); apply(); }, 120);
  });

  // -- expand, collapse, side by side, links to an episode ---------------------------------------------
  document.getElementById('expand').addEventListener('click', function () {
    episodes.forEach(function (episode) { if (episode.style.display !== 'none') { drawBody(episode); episode.open = true; } });
  });
  document.getElementById('collapse').addEventListener('click', function () {
    episodes.forEach(function (episode) { episode.open = false; });
  });
  document.querySelectorAll('button.side').forEach(function (button) {
    button.addEventListener('click', function () { button.closest('.group').classList.toggle('side'); });
  });
  function openFromHash() {
    var match = /^#e(\d+)$/.exec(location.hash);
    var episode = match && document.getElementById('e' + match[1]);
    if (!episode) return;
    [episode, episode.closest('.group'), episode.closest('section.file')].forEach(function (box) {
      if (box) box.style.display = '';
    });
    drawBody(episode);
    episode.open = true;
    episode.scrollIntoView();
  }
  window.addEventListener('hashchange', openFromHash);
  document.addEventListener('click', function (event) {
    var link = event.target.closest && event.target.closest('a[href^="#e"]');
    if (link && link.getAttribute('href') === location.hash) openFromHash();  // the same link again
  });
  openFromHash();
})();
