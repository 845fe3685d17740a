/**
 * Entry: sign up, verify the emailed code (the merchant key shown once, then signed in), log in,
 * log out, through the merchants service with the API's texts shown next to their fields.
 */
import type { MiddlewareHandler } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { Deps } from "../../deps.ts";
import type { ErrorCode } from "../../errors.ts";
import type { ErrorAnswer } from "../../http/error-map.ts";
import { M } from "../../http/messages.ts";
import {
  clearCookie,
  MERCHANT_COOKIE,
  MERCHANT_SESSION_SECONDS,
  setSessionCookie,
} from "../../http/session-token.ts";
import * as merchants from "../merchants/merchants.service.ts";
import { loginBody, signupBody, verifyBody } from "../merchants/merchants.schemas.ts";
import {
  type FormState,
  LoginView,
  SignupView,
  VerifiedView,
  VerifyView,
} from "../../../views/dashboard/entry.tsx";
import {
  attempt,
  type DashContext,
  formBody,
  page,
  redirect,
  safeNext,
  sessionOf,
  single,
} from "./dashboard.http.tsx";
import type { DashboardApp } from "./section.ts";

/** Paths served without a session. */
export const PUBLIC_PATHS = new Set(["/dashboard/login", "/dashboard/signup", "/dashboard/verify"]);

const SIGNUP_FIELD_MESSAGES: Record<string, string> = {
  email: M.signupEmail,
  businessName: M.signupBusinessName,
  password: M.signupPassword,
  walletProvider: M.signupWalletProvider,
};

/** Where each service error belongs on the form. */
const ERROR_FIELD: Partial<Record<ErrorCode, string>> = {
  email_taken: "email",
  account_not_found: "email",
  account_already_verified: "email",
  verification_code_invalid: "code",
  verification_code_expired: "code",
  verification_code_locked: "code",
  login_invalid: "password",
  login_unverified: "email",
};

function placed(e: ErrorAnswer): FormState {
  const field = e.code && ERROR_FIELD[e.code];
  return field
    ? { errors: { [field]: e.message } }
    : { notice: { kind: "error", text: e.message } };
}

/** Each missing field gets the endpoint's "are required" text. */
function missing(values: Record<string, string>, fields: string[], text: string) {
  const errors: Record<string, string> = {};
  for (const f of fields) if (!values[f]?.trim()) errors[f] = text;
  return Object.keys(errors).length ? errors : { [fields[0]]: text };
}

export function entryRoutes(app: DashboardApp, deps: Deps, limited: MiddlewareHandler) {
  const csrf = (c: DashContext) => c.get("csrfToken");
  const landing = (c: DashContext) => safeNext(c.req.query("next")) ?? "/dashboard";

  app.get("/login", (c) => {
    if (sessionOf(c)?.merchant) return c.redirect(landing(c), 302);
    const notice = c.req.query("loggedOut") === "1"
      ? { kind: "ok" as const, text: M.loggedOut }
      : c.req.query("ended") === "1"
      ? { kind: "error" as const, text: M.sessionEnded }
      : undefined;
    return page(c, {
      title: "Log in",
      entry: true,
      body: <LoginView csrf={csrf(c)} next={safeNext(c.req.query("next"))} notice={notice} />,
    });
  });

  app.post("/login", limited, async (c) => {
    const values = single(await formBody(c));
    const next = safeNext(values.next);
    const show = (status: ContentfulStatusCode, state: Parameters<typeof LoginView>[0]) =>
      page(c, { title: "Log in", entry: true, status, body: <LoginView {...state} /> });
    const parsed = loginBody.safeParse(values);
    if (!parsed.success) {
      return show(400, {
        csrf: csrf(c),
        next,
        values,
        errors: missing(values, ["email", "password"], M.loginFields),
      });
    }
    const r = await attempt(() => merchants.login(deps, parsed.data));
    if (!r.ok) {
      return show(r.error.status, { csrf: csrf(c), next, values, ...placed(r.error) });
    }
    setSessionCookie(c, deps.config, MERCHANT_COOKIE, r.value.token, MERCHANT_SESSION_SECONDS);
    return redirect(c, next ?? "/dashboard");
  });

  app.get(
    "/signup",
    (c) => page(c, { title: "Sign up", entry: true, body: <SignupView csrf={csrf(c)} /> }),
  );

  app.post("/signup", limited, async (c) => {
    const values = single(await formBody(c));
    const parsed = signupBody.safeParse({
      ...values,
      walletProvider: values.walletProvider || undefined,
    });
    if (!parsed.success) {
      const errors: Record<string, string> = {};
      for (const issue of parsed.error.issues) {
        const field = String(issue.path[0] ?? "email");
        errors[field] ??= SIGNUP_FIELD_MESSAGES[field] ?? M.signupEmail;
      }
      return page(c, {
        title: "Sign up",
        entry: true,
        status: 400,
        body: <SignupView csrf={csrf(c)} values={values} errors={errors} />,
      });
    }
    const r = await attempt(() => merchants.signup(deps, parsed.data));
    if (!r.ok) {
      return page(c, {
        title: "Sign up",
        entry: true,
        status: r.error.status,
        body: <SignupView csrf={csrf(c)} values={values} {...placed(r.error)} />,
      });
    }
    c.header("HX-Push-Url", "/dashboard/verify");
    return page(c, {
      title: "Verify your email",
      entry: true,
      body: (
        <VerifyView
          csrf={csrf(c)}
          values={{ email: r.value.email }}
          notice={{ kind: "ok", text: M.codeSent }}
        />
      ),
    });
  });

  app.get("/verify", (c) =>
    page(c, {
      title: "Verify your email",
      entry: true,
      body: <VerifyView csrf={csrf(c)} values={{ email: c.req.query("email") ?? "" }} />,
    }));

  app.post("/verify", limited, async (c) => {
    const values = single(await formBody(c));
    const show = (status: ContentfulStatusCode, state: FormState) =>
      page(c, {
        title: "Verify your email",
        entry: true,
        status,
        body: <VerifyView csrf={csrf(c)} values={{ ...values, password: "" }} {...state} />,
      });
    const parsed = verifyBody.safeParse(values);
    if (!parsed.success) {
      return show(400, { errors: missing(values, ["email", "code"], M.verifyFields) });
    }
    const r = await attempt(() => merchants.verify(deps, parsed.data));
    if (!r.ok) return show(r.error.status, placed(r.error));

    // Verified: the key is shown now, once. Sign in with the password given on the form.
    let loggedIn = false;
    if (values.password) {
      const login = await attempt(() =>
        merchants.login(deps, { email: parsed.data.email, password: values.password })
      );
      if (login.ok) {
        setSessionCookie(
          c,
          deps.config,
          MERCHANT_COOKIE,
          login.value.token,
          MERCHANT_SESSION_SECONDS,
        );
        loggedIn = true;
      }
    }
    return page(c, {
      title: "Account verified",
      entry: true,
      body: (
        <VerifiedView
          message={M.verified}
          apiKey={r.value.apiKey}
          warning={M.keyWarning}
          loggedIn={loggedIn}
          login={loggedIn ? undefined : M.dashVerifiedLogIn}
        />
      ),
    });
  });

  app.post("/logout", async (c) => {
    const session = sessionOf(c);
    if (session?.sessionId) await merchants.logout(deps, session.sessionId);
    clearCookie(c, deps.config, MERCHANT_COOKIE);
    return redirect(c, "/dashboard/login?loggedOut=1");
  });

  // The header's test-mode switch: the session's mode, then back to the page it was on.
  app.post("/mode", async (c) => {
    const session = sessionOf(c);
    const { mode, back } = single(await formBody(c));
    if (session?.sessionId && (mode === "test" || mode === "live")) {
      await merchants.setSessionMode(deps, session.sessionId, mode);
    }
    return redirect(c, modeReturn(c, back, c.get("nav").map((n) => n.path)));
  });
}

/**
 * Where the switch returns: the page it was on (for htmx the browser's URL, which can differ from
 * the full page's), or a detail page's section list, since the record belongs to the other mode.
 */
function modeReturn(c: DashContext, back: string | undefined, sections: string[]): string {
  const raw = c.req.header("hx-request") === "true" ? c.req.header("hx-current-url") : undefined;
  let from: string | undefined;
  if (raw) {
    try {
      const u = new URL(raw);
      from = u.pathname + u.search;
    } catch {
      from = undefined;
    }
  }
  const next = safeNext(from ?? back);
  if (!next) return "/dashboard";
  const path = next.split("?")[0];
  if (sections.includes(path)) return next;
  const owner = sections
    .filter((s) => s !== "/dashboard" && path.startsWith(s + "/"))
    .sort((a, b) => b.length - a.length)[0];
  return owner ?? "/dashboard";
}
