// fleetprof web app — the data table: click a header to sort (again to reverse), filter rows by
// a name substring, and render at most `limit` rows until the user asks for all of them.
// The table does not own its state: it reports every change through onStateChange so the
// page can keep it in the URL, and renders from the state it is given.

import {appendChildren, clear, debounce, fmtDuration, fmtInt, h, num} from './core.js';

export const DEFAULT_ROW_LIMIT = 200;
const RENDER_CHUNK = 500;

// Column helpers. `value` gives the sort key, `cell` the content of the cell.
export function textColumn(key, label, options) {
  return Object.assign({key, label, kind: 'text', value: (row) => row[key] || ''}, options || {});
}

export function numberColumn(key, label, options) {
  return Object.assign({key, label, kind: 'num', value: (row) => num(row[key]),
                        cell: (row) => fmtInt(num(row[key])),
                        title: (row) => fmtInt(num(row[key]))}, options || {});
}

export function durationColumn(key, label, options) {
  return Object.assign({key, label, kind: 'num', value: (row) => num(row[key]),
                        cell: (row) => fmtDuration(row[key]),
                        title: (row) => `${fmtInt(num(row[key]))} ns`}, options || {});
}

function compareRows(column, dir) {
  const sign = dir === 'asc' ? 1 : -1;
  if (column.kind === 'num') {
    return (a, b) => sign * (a.sortValue - b.sortValue) || a.index - b.index;
  }
  return (a, b) => sign * String(a.sortValue).localeCompare(String(b.sortValue)) || a.index - b.index;
}

// Sorts and filters; returns [{row, index, sortValue}] in display order.
function arrangeRows(rows, columns, state, filterText) {
  const q = (state.q || '').toLowerCase();
  const column = columns.find((c) => c.key === state.sort);
  let items = rows.map((row, index) => ({row, index, sortValue: column ? column.value(row) : 0}));
  if (q) items = items.filter((item) => filterText(item.row).toLowerCase().includes(q));
  if (column) items.sort(compareRows(column, state.dir === 'asc' ? 'asc' : 'desc'));
  return items;
}

function headerCell(column, state, onSort) {
  const sorted = state.sort === column.key;
  const dir = sorted ? (state.dir === 'asc' ? 'asc' : 'desc') : null;
  const th = h('th', {'data-key': column.key, class: `sortable ${column.kind === 'num' ? 'num' : ''}`.trim(),
                      'aria-sort': dir ? (dir === 'asc' ? 'ascending' : 'descending') : 'none',
                      title: column.help || `Sort by ${column.label}`, scope: 'col',
                      style: column.width ? `width:${column.width}` : null},
               h('span', {class: 'th-label'}, column.label),
               h('span', {class: 'sort-mark'}, dir === 'asc' ? '▲' : dir === 'desc' ? '▼' : ''));
  th.addEventListener('click', () => onSort(column));
  return th;
}

function bodyRow(item, columns) {
  const tr = h('tr');
  for (const column of columns) {
    const content = column.cell ? column.cell(item.row) : item.row[column.key];
    const td = h('td', {'data-key': column.key,
                        class: [column.kind === 'num' ? 'num' : '', column.className || ''].join(' ').trim() || null,
                        title: column.title ? column.title(item.row) : null});
    if (column.kind === 'num') td.setAttribute('data-value', String(item.sortValue ?? column.value(item.row)));
    appendChildren(td, [content === undefined || content === null || content === '' ? '–' : content]);
    tr.append(td);
  }
  return tr;
}

// options: {className, columns, rows, state: {sort, dir, q, all}, onStateChange(state),
//           filterText(row) (default row.name), limit, emptyText, filterPlaceholder}
export function createDataTable(options) {
  const columns = options.columns;
  const limit = options.limit || DEFAULT_ROW_LIMIT;
  const filterText = options.filterText || ((row) => row.name || '');
  const state = Object.assign({sort: '', dir: '', q: '', all: false}, options.state);
  const report = () => options.onStateChange && options.onStateChange(Object.assign({}, state));

  const filter = h('input', {type: 'search', class: 'table-filter', value: state.q || '',
                             placeholder: options.filterPlaceholder || 'Filter by name…',
                             'aria-label': 'Filter rows by name'});
  const counter = h('span', {class: 'table-count'});
  const resetSort = h('button', {class: 'link-button', type: 'button'}, 'default order');
  const thead = h('thead');
  const tbody = h('tbody');
  const footer = h('div', {class: 'table-footer'});
  const table = h('table', {class: `data-table ${options.className}`}, thead, tbody);

  // Rows beyond the first RENDER_CHUNK go in on later tasks, so "show all" on thousands of
  // rows never freezes the page; a newer render cancels the rest of an older one.
  let renderToken = 0;
  function appendRows(items, from, token) {
    if (token !== renderToken) return;
    const fragment = document.createDocumentFragment();
    const to = Math.min(items.length, from + RENDER_CHUNK);
    for (let i = from; i < to; i++) fragment.append(bodyRow(items[i], columns));
    tbody.append(fragment);
    if (to < items.length) setTimeout(() => appendRows(items, to, token), 0);
  }

  function render() {
    const items = arrangeRows(options.rows, columns, state, filterText);
    const shown = state.all ? items : items.slice(0, limit);
    clear(thead).append(h('tr', null, columns.map((c) => headerCell(c, state, sortBy))));
    clear(tbody);
    appendRows(shown, 0, ++renderToken);
    if (!items.length) {
      tbody.append(h('tr', {class: 'empty-row'}, h('td', {colspan: columns.length},
        state.q ? `No row matches “${state.q}”.` : (options.emptyText || 'No rows.'))));
    }
    const total = options.rows.length;
    counter.textContent = `${fmtInt(shown.length)} of ${fmtInt(items.length)} rows` +
                          (items.length !== total ? ` (filtered from ${fmtInt(total)})` : '');
    resetSort.hidden = !state.sort;
    clear(footer);
    if (items.length > limit) {
      footer.append(h('button', {type: 'button', class: 'btn show-all', onclick: () => {
        state.all = !state.all;
        report();
        render();
      }}, state.all ? `Show the first ${fmtInt(limit)} rows` : `Show all ${fmtInt(items.length)} rows`));
    }
  }

  function sortBy(column) {
    if (state.sort === column.key) state.dir = state.dir === 'asc' ? 'desc' : 'asc';
    else {
      state.sort = column.key;
      state.dir = column.kind === 'num' ? 'desc' : 'asc';
    }
    report();
    render();
  }

  filter.addEventListener('input', debounce(() => {
    state.q = filter.value;
    report();
    render();
  }, 150));
  resetSort.addEventListener('click', () => {
    state.sort = '';
    state.dir = '';
    report();
    render();
  });

  render();
  return h('div', {class: 'table-block'},
           h('div', {class: 'table-toolbar'}, filter, counter, resetSort),
           h('div', {class: 'table-scroll'}, table), footer);
}

// Table state as kept in the URL: ?sort=count&dir=asc&q=conv&all=1
export function tableStateFromQuery(q) {
  return {sort: q.get('sort') || '', dir: q.get('dir') === 'asc' ? 'asc' : (q.get('sort') ? 'desc' : ''),
          q: q.get('q') || '', all: q.get('all') === '1'};
}

export function tableStateToQuery(state) {
  return {sort: state.sort || null, dir: state.sort ? state.dir : null, q: state.q || null,
          all: state.all ? '1' : null};
}
