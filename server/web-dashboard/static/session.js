// The dashboard credential lives in this tab's sessionStorage only: it is gone when the tab closes and
// is never sent anywhere but this origin's dashboard API.
const TOKEN_KEY = 'tis.dashboard.token';

export function getToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function clearToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}
