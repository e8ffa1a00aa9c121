// fleetprof web app — the router. Every page has a real path (the server answers index.html
// for all of them); links are followed with history.pushState and a page's state lives in its
// query string, so any view can be reloaded or shared as a link. app.js hands it the routes.

import {resetCharts} from './charts.js';
import {clear, clearBanner, errorBlock, showError} from './core.js';

// ---------------------------------------------------------------------------------------------
// The page being shown: its container, and timers that stop when the user navigates away.

function createPage(main) {
  const timers = new Set();
  let alive = true;
  return {
    main,
    alive: () => alive,
    // Runs fn after ms unless the page has been left by then.
    later(fn, ms) {
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (alive) Promise.resolve().then(fn).catch((err) => showError(err));
      }, ms);
      timers.add(timer);
    },
    // Awaits a request; on failure shows the error in the banner and in `holder`, returns null.
    async load(promise, holder, context) {
      try {
        const value = await promise;
        return alive ? value : null;
      } catch (err) {
        if (!alive) return null;
        showError(err, context);
        clear(holder).append(errorBlock(err, context));
        return null;
      }
    },
    close() {
      alive = false;
      timers.forEach(clearTimeout);
      timers.clear();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Router

// [{pattern, nav, title, render(page, ...captures)}] and the page for paths none matches;
// set once by startRouter().
let routes = [];
let notFound = {nav: '', title: 'Not found', render: () => {}};
let currentPage = null;

function decodeSegment(segment) {
  try { return decodeURIComponent(segment); } catch (e) { return segment; }
}

// Renders the page of the current URL (after leaving the one shown).
export function route() {
  if (currentPage) currentPage.close();
  resetCharts();
  clearBanner();
  const main = clear(document.getElementById('main'));
  const page = currentPage = createPage(main);
  const matched = routes.map((r) => [r, r.pattern.exec(location.pathname)]).find(([, m]) => m);
  const [spec, match] = matched || [notFound, []];
  for (const link of document.querySelectorAll('.nav a')) {
    link.classList.toggle('active', link.dataset.nav === spec.nav);
  }
  document.title = `${spec.title} · fleetprof`;
  const args = match.slice(1).map(decodeSegment);
  Promise.resolve().then(() => spec.render(page, ...args)).catch((err) => {
    if (page.alive()) showError(err);
  });
}

// Goes to a page of the app (pushes a history entry unless it is the current URL).
export function navigate(url) {
  if (url !== location.pathname + location.search + location.hash) history.pushState(null, '', url);
  route();
  window.scrollTo(0, 0);
}

const SERVER_PATHS = /^\/(api|assets)\/|^\/(metrics|healthz)$/;

// Follows same-origin links inside the app without reloading the page.
function interceptLinks(event) {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey ||
      event.shiftKey || event.altKey) return;
  const link = event.target.closest && event.target.closest('a[href]');
  if (!link || link.target || link.hasAttribute('download')) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || SERVER_PATHS.test(url.pathname)) return;
  event.preventDefault();
  navigate(url.pathname + url.search + url.hash);
}

// Takes the routes and follows in-app links and the back/forward buttons from now on;
// route() then shows the current URL.
export function startRouter(routeList, notFoundRender) {
  routes = routeList;
  notFound = {nav: '', title: 'Not found', render: notFoundRender};
  document.addEventListener('click', interceptLinks);
  window.addEventListener('popstate', route);
}
