// fleetprof web app — polling: ask the server again and again on the page's timers (so it
// stops when the user navigates away). Used by the fleet page (agents every 2 s) and the
// captures page (a running capture every 500 ms).

// poll(page, {request, onValue, onError, delay}):
//   request()      → a promise of the next answer (e.g. () => api(url));
//   onValue(value) → ms until the next request, or null to stop;
//   onError(err)   → same, for a failed request (the poller shows nothing itself);
//   delay          → ms until the first request; null (default): request now.
// Neither callback runs once the page is left or stop() was called (a newer poll of the same
// thing replaces an older one that way). Returns {stop(), done}: `done` settles when the first
// answer has been handled (at once when `delay` is set), and rejects if a callback threw then.
export function poll(page, {request, onValue, onError, delay = null}) {
  let stopped = false;
  const live = () => !stopped && page.alive();
  const next = (ms) => {
    if (ms !== null && ms !== undefined && live()) page.later(tick, ms);
  };
  async function tick() {
    if (!live()) return;
    let value;
    try {
      value = await request();
    } catch (err) {
      if (live()) next(onError(err));
      return;
    }
    if (live()) next(onValue(value));
  }
  let done;
  if (delay === null) done = tick();
  else {
    next(delay);
    done = Promise.resolve();
  }
  return {stop() { stopped = true; }, done};
}
