/** The queue view's login form; `failed` adds the line that says the token was not accepted. */
export function loginPage(action: string, failed: boolean): string {
  const notice = failed ? '<p role="alert">That token is not accepted.</p>' : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Queue view · sign in</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 26rem; margin: 4rem auto; padding: 0 1rem; }
label, input, button { display: block; width: 100%; box-sizing: border-box; font-size: 1rem; }
input { margin: 0.5rem 0 1rem; padding: 0.5rem; }
button { padding: 0.5rem; }
[role="alert"] { color: #a00; }
</style>
</head>
<body>
<h1>Queue view</h1>
${notice}
<form method="post" action="${action}">
<label for="token">Queue view token (one of QUEUE_VIEW_TOKENS)</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>
</body>
</html>
`;
}
