// fleetprof web app — the entry module (index.html loads only this one): the routes of the
// app's pages, then start-up. Every page has a real path (the server answers index.html for
// all of them); router.js follows links with history.pushState and shows the page of a path.

import {renderCapturesPage} from './captures.js';
import {renderComparePage} from './compare.js';
import {h, showUncaughtError, updateTokenIndicator} from './core.js';
import {renderFleetPage} from './fleet.js';
import {renderJobPage} from './jobs.js';
import {renderProfilePage, renderProfilesPage} from './profiles.js';
import {route, startRouter} from './router.js';
import {renderJobTracePage, renderTracePage} from './trace.js';

// ---------------------------------------------------------------------------------------------
// The page for a path no route matches

function renderNotFoundPage(page) {
  page.main.append(h('section', {class: 'card coming-soon'}, h('h1', null, 'No such page'),
    h('p', {class: 'mono'}, location.pathname),
    h('div', {class: 'link-row'}, h('a', {class: 'btn', href: '/profiles'}, 'Profiles'),
      h('a', {class: 'btn', href: '/fleet'}, 'Fleet'), h('a', {class: 'btn', href: '/captures'}, 'Captures'))));
}

// ---------------------------------------------------------------------------------------------
// Routes

const ROUTES = [
  {pattern: /^\/(?:profiles\/?)?$/, nav: 'profiles', title: 'Profiles', render: renderProfilesPage},
  {pattern: /^\/profiles\/([^/]+)\/trace\/?$/, nav: 'profiles', title: 'Trace', render: renderTracePage},
  {pattern: /^\/profiles\/([^/]+)\/?$/, nav: 'profiles', title: 'Profile', render: renderProfilePage},
  {pattern: /^\/compare\/?$/, nav: 'profiles', title: 'Compare', render: renderComparePage},
  {pattern: /^\/jobs\/([^/]+)\/trace\/?$/, nav: 'profiles', title: 'Job trace', render: renderJobTracePage},
  {pattern: /^\/jobs\/([^/]+)\/?$/, nav: 'profiles', title: 'Job', render: renderJobPage},
  {pattern: /^\/fleet\/?$/, nav: 'fleet', title: 'Fleet', render: renderFleetPage},
  {pattern: /^\/captures\/?$/, nav: 'captures', title: 'Captures', render: renderCapturesPage},
];

function start() {
  startRouter(ROUTES, renderNotFoundPage);
  // Uncaught errors are bugs; the browser logs them, the banner makes them visible.
  window.addEventListener('error', (event) => showUncaughtError(event.error || event.message));
  window.addEventListener('unhandledrejection', (event) => showUncaughtError(event.reason));
  updateTokenIndicator();
  route();
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
