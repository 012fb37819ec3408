// The picker's enhancements (server/lti/picker-page.ts); the pages work without them. Inlined under the
// page's script nonce, so plain script, no modules.
(function () {
  'use strict';

  // The end of a choice: the Deep Linking response goes back to the LMS after a moment to read it.
  var respond = document.getElementById('respond');
  if (respond) {
    setTimeout(function () { respond.submit(); }, Number(respond.getAttribute('data-delay')) || 0);
    return;
  }

  var form = document.getElementById('pick');
  if (!form) return;
  var multiple = form.getAttribute('data-multiple') === '1';
  var error = document.getElementById('pick-error');
  var chosen = document.getElementById('chosen');

  function boxes(root) { return Array.prototype.slice.call(root.querySelectorAll('input[name="extid"]')); }

  // An extid shown twice is one location: counts go by extid, and its boxes tick together.
  function tally(root) {
    var all = {}, ticked = {}, total = 0, count = 0;
    boxes(root).forEach(function (box) {
      if (!all[box.value]) { all[box.value] = true; total += 1; }
      if (box.checked && !ticked[box.value]) { ticked[box.value] = true; count += 1; }
    });
    return { total: total, count: count };
  }

  function setAll(value, checked) {
    boxes(form).forEach(function (box) { if (box.value === value) box.checked = checked; });
  }

  function refresh() {
    Array.prototype.forEach.call(form.querySelectorAll('li.group'), function (group) {
      var t = tally(group.querySelector('details'));
      group.querySelector('.count').textContent = t.count + ' of ' + t.total + ' chosen';
      var box = group.querySelector('.group-box');
      if (box) {
        box.checked = t.total > 0 && t.count === t.total;
        box.indeterminate = t.count > 0 && t.count < t.total;
        box.disabled = t.total === 0;
      }
    });
    var n = tally(form).count;
    chosen.textContent = n === 0 ? 'Nothing chosen yet' : n + ' chosen';
    if (n > 0) error.hidden = true;
  }

  Array.prototype.forEach.call(form.querySelectorAll('.group-box'), function (box) { box.hidden = false; });

  form.addEventListener('change', function (event) {
    var target = event.target;
    if (target.classList.contains('group-box')) {
      // The group's checkbox takes or releases its whole subtree (contract).
      boxes(target.closest('li.group')).forEach(function (box) { setAll(box.value, target.checked); });
    } else if (target.name === 'extid' && multiple) {
      setAll(target.value, target.checked);
    }
    refresh();
  });

  form.addEventListener('submit', function (event) {
    if (event.submitter && event.submitter.name === 'cancel') return;
    if (tally(form).count > 0) return;
    event.preventDefault();
    error.textContent = form.getAttribute('data-nothing');
    error.hidden = false;
    error.focus();
  });

  refresh();
})();
