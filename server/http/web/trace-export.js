// fleetprof web app — trace viewer, export: the window on screen as Chrome-trace JSON, to
// download or to open in ui.perfetto.dev (its postMessage protocol).

import {ApiError, HTTP_CODE_NAMES, fmtOffset, h, readToken, showError} from './core.js';
import {TRACE, toAbs} from './trace-layout.js';

// The window on screen from …/export (with the token, as api() would send it).
async function fetchWindowBytes(tv) {
  const {v} = tv;
  const params = new URLSearchParams({format: 'chrome_json', start_ns: toAbs(tv, Math.max(0, v.s)), end_ns: toAbs(tv, Math.max(v.s + 1, v.e))});
  const headers = {};
  const token = readToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (!tv.urls.export) throw new ApiError('UNIMPLEMENTED', 'a job\'s window has no export: open a rank\'s own trace', 0);
  const response = await fetch(`${tv.urls.export}?${params}`, {headers});
  if (!response.ok) throw new ApiError(HTTP_CODE_NAMES[response.status] || 'UNKNOWN', `export failed (HTTP ${response.status})`, response.status);
  return response.arrayBuffer();
}

// Wires the toolbar's "Download window" and "Open in Perfetto" buttons.
export function attachExport(tv, exportBtn, perfettoBtn) {
  const {v, profileId} = tv;
  exportBtn.addEventListener('click', async () => {
    try {
      const bytes = await fetchWindowBytes(tv);
      const link = h('a', {href: URL.createObjectURL(new Blob([bytes], {type: 'application/json'})),
                           download: `${profileId}-window.trace.json`});
      document.body.append(link);
      link.click();
      link.remove();
    } catch (err) { showError(err, 'Could not export the window'); }
  });
  // Perfetto's postMessage protocol: PING until the UI answers PONG, then hand it the trace.
  perfettoBtn.addEventListener('click', async () => {
    const win = window.open(`${TRACE.perfettoOrigin}/#!/`, '_blank');
    if (!win) { showError(new Error('the browser blocked the Perfetto window (allow pop-ups for this page)')); return; }
    let bytes;
    try { bytes = await fetchWindowBytes(tv); } catch (err) { showError(err, 'Could not export the window'); return; }
    const title = `fleetprof ${profileId} ${fmtOffset(v.s)}…${fmtOffset(v.e)}`;
    let tries = 0;
    const ping = setInterval(() => {
      if (++tries > 60) { clearInterval(ping); window.removeEventListener('message', onPong); showError(new Error('Perfetto did not answer (is ui.perfetto.dev reachable from this browser?)')); return; }
      win.postMessage('PING', TRACE.perfettoOrigin);
    }, 500);
    function onPong(event) {
      if (event.origin !== TRACE.perfettoOrigin || event.data !== 'PONG') return;
      clearInterval(ping);
      window.removeEventListener('message', onPong);
      win.postMessage({perfetto: {buffer: bytes, title, fileName: `${profileId}.trace.json`, url: location.href}}, TRACE.perfettoOrigin);
    }
    window.addEventListener('message', onPong);
    win.postMessage('PING', TRACE.perfettoOrigin);
  });
}
