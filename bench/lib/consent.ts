/**
 * Just enough of a browser for the consent screen: a cookie jar and the
 * CSRF token of the page. The first approval signs in with the password and
 * keeps the session cookie; after that, one POST (no password) approves.
 */

export class CookieJar {
  private cookies = new Map<string, string>();

  store(response: Response): void {
    for (const header of response.headers.getSetCookie()) {
      const [pair = ""] = header.split(";");
      const index = pair.indexOf("=");
      const name = pair.slice(0, index).trim();
      const value = pair.slice(index + 1).trim();
      if (/Max-Age=0/i.test(header)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }
}

export class ConsentBrowser {
  private readonly jar = new CookieJar();
  private csrfToken: string | undefined;
  private signedIn = false;

  constructor(
    private readonly issuer: string,
    private readonly account: { identifier: string; password: string },
  ) {}

  /** Approves the pushed request behind `authorizeUrl`; returns the redirect (with the code). */
  async approve(authorizeUrl: string): Promise<URL> {
    if (!this.csrfToken) {
      const page = await fetch(authorizeUrl, { headers: { cookie: this.jar.header() }, redirect: "manual" });
      this.jar.store(page);
      const html = await page.text();
      this.csrfToken = /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];
      if (page.status !== 200 || !this.csrfToken) throw new Error(`consent page not shown (${page.status}): ${html.slice(0, 300)}`);
    }
    const url = new URL(authorizeUrl);
    const form = new URLSearchParams({
      csrf_token: this.csrfToken,
      request_uri: url.searchParams.get("request_uri") ?? "",
      client_id: url.searchParams.get("client_id") ?? "",
      decision: "allow",
    });
    if (!this.signedIn) {
      form.set("identifier", this.account.identifier);
      form.set("password", this.account.password);
    }
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", cookie: this.jar.header(), origin: this.issuer },
      body: form,
      redirect: "manual",
    });
    this.jar.store(response);
    const location = response.headers.get("location");
    if (response.status !== 303 || !location) throw new Error(`consent not approved (${response.status}): ${(await response.text()).slice(0, 300)}`);
    await response.body?.cancel();
    this.signedIn = true;
    return new URL(location);
  }
}
