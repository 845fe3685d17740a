/**
 * The dashboard's shells and shared components: the full page (skip link, header, section nav,
 * main, confirmation dialog), the entry page (login, signup, verify) and the pieces every
 * section uses (fields with inline errors, notices, empty states, copy fields, times).
 * Components only: no data access; everything arrives as props.
 */
import type { Child } from "hono/jsx";
import { Layout } from "../layout.tsx";

export interface NavItem {
  id: string;
  label: string;
  path: string;
}

export interface Assets {
  css: string;
  js: string;
  htmx: string;
  /** The live panels' script (SSE, polling as the fallback): views/assets/live.js. */
  live?: string;
}

/** Texts the page script shows (from the message catalog). */
export type ScriptTexts = Record<string, string>;

export interface ShellProps {
  title: string;
  csrf: string;
  assets: Assets;
  texts: ScriptTexts;
  /** The signed-in merchant; absent on entry pages. */
  merchant?: { businessName: string; email: string };
  nav?: NavItem[];
  current?: string;
  /** The session's mode (signed-in pages): the header's switch and, in test mode, the banner. */
  mode?: "live" | "test";
  /** The page's path, where the switch returns without JS. */
  path?: string;
  children?: Child;
}

/**
 * htmx settings: no eval and no inline styles (the CSP forbids both; settling must not copy a
 * `style` attribute either, which the browser can leave empty on inputs); nothing kept in the
 * history cache (pages can carry a key shown once, and the cache lives in localStorage), so
 * back/forward reloads; every status is swapped, because our 4xx answers carry the form with
 * its inline errors.
 */
export const HTMX_CONFIG = {
  includeIndicatorStyles: false,
  allowEval: false,
  allowScriptTags: false,
  attributesToSettle: ["class", "width", "height"],
  selfRequestsOnly: true,
  historyCacheSize: 0,
  refreshOnHistoryMiss: true,
  historyRestoreAsHxRequest: false,
  responseHandling: [{ code: "204", swap: false }, { code: "...", swap: true }],
};

function Head(props: { csrf: string; assets: Assets }) {
  return (
    <>
      <meta name="htmx-config" content={JSON.stringify(HTMX_CONFIG)} />
      <meta name="csrf-token" content={props.csrf} />
      <meta name="referrer" content="same-origin" />
      <link rel="stylesheet" href={props.assets.css} />
      <script src={props.assets.htmx} defer></script>
      <script src={props.assets.js} defer></script>
      {props.assets.live && <script src={props.assets.live} defer></script>}
    </>
  );
}

/** The signed-in page: skip link, header with log out, the section nav and the main region. */
export function DashboardPage(props: ShellProps) {
  return (
    <Layout title={props.title} head={<Head csrf={props.csrf} assets={props.assets} />}>
      <div
        class="app"
        hx-headers={JSON.stringify({
          "X-CSRF-Token": props.csrf,
          // The mode this page shows: a request from a tab left in the other mode reloads it.
          ...(props.mode ? { "X-Dashboard-Mode": props.mode } : {}),
        })}
        {...dataTexts(props.texts)}
      >
        <a class="skip-link" href="#main">Skip to content</a>
        <header class="top">
          <a class="brand" href="/dashboard">Settlement</a>
          {props.merchant && (
            <div class="who">
              <span class="business">{props.merchant.businessName}</span>
              <span class="email">{props.merchant.email}</span>
            </div>
          )}
          {props.merchant && props.mode && (
            <ModeSwitch mode={props.mode} csrf={props.csrf} path={props.path} />
          )}
          {props.merchant && (
            <form method="post" action="/dashboard/logout" class="logout">
              <CsrfInput token={props.csrf} />
              <button type="submit" class="link-button">Log out</button>
            </form>
          )}
        </header>
        {props.mode === "test" && <TestModeBanner />}
        {props.nav && <Nav items={props.nav} current={props.current} />}
        <div id="flash" class="flash" role="alert" hidden></div>
        <main id="main" tabindex={-1}>{props.children}</main>
        <ConfirmDialog />
      </div>
    </Layout>
  );
}

/**
 * Test mode's switch: one button (a switch, checked in test mode) that posts the other mode; a
 * plain form without JS, htmx with it. Either way the server sends the browser back to this page.
 */
export function ModeSwitch(props: { mode: "live" | "test"; csrf: string; path?: string }) {
  const test = props.mode === "test";
  return (
    <form
      method="post"
      action="/dashboard/mode"
      class="mode-switch"
      hx-post="/dashboard/mode"
      hx-swap="none"
    >
      <CsrfInput token={props.csrf} />
      <input type="hidden" name="mode" value={test ? "live" : "test"} />
      {props.path && <input type="hidden" name="back" value={props.path} />}
      <button
        type="submit"
        role="switch"
        aria-checked={test ? "true" : "false"}
        class="switch"
        data-mode={props.mode}
      >
        <span class="switch-track" aria-hidden="true"></span>
        Test mode
      </button>
    </form>
  );
}

/** On every page in test mode: what the person sees are testnet records. */
export function TestModeBanner() {
  return (
    <aside class="test-banner" id="test-banner" aria-label="Test mode">
      <strong>Test mode.</strong>{" "}
      You are viewing and acting on test data (testnet) only. Live records are hidden.
    </aside>
  );
}

/** Login, signup and verification: the same page without nav. */
export function EntryPage(props: ShellProps) {
  return (
    <Layout title={props.title} head={<Head csrf={props.csrf} assets={props.assets} />}>
      <div
        class="app entry"
        hx-headers={JSON.stringify({ "X-CSRF-Token": props.csrf })}
        {...dataTexts(props.texts)}
      >
        <a class="skip-link" href="#main">Skip to content</a>
        <header class="top">
          <a class="brand" href="/dashboard">Settlement</a>
        </header>
        <div id="flash" class="flash" role="alert" hidden></div>
        <main id="main" tabindex={-1} class="narrow">{props.children}</main>
      </div>
    </Layout>
  );
}

/** What an htmx navigation gets: the new title, the nav (out of band) and the section. */
export function Partial(
  props: { title: string; nav?: NavItem[]; current?: string; children?: Child },
) {
  return (
    <>
      <title>{props.title}</title>
      {props.nav && <Nav items={props.nav} current={props.current} oob />}
      {props.children}
    </>
  );
}

export function Nav(props: { items: NavItem[]; current?: string; oob?: boolean }) {
  return (
    <nav
      id="nav"
      class="sections"
      aria-label="Dashboard sections"
      hx-swap-oob={props.oob ? "true" : undefined}
    >
      <ul>
        {props.items.map((item) => (
          <li>
            <a
              href={item.path}
              hx-get={item.path}
              hx-target="#main"
              hx-push-url="true"
              aria-current={item.id === props.current ? "page" : undefined}
            >
              {item.label}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}

function ConfirmDialog() {
  return (
    <dialog id="confirm-dialog" aria-labelledby="confirm-title" aria-describedby="confirm-text">
      <form method="dialog">
        <h2 id="confirm-title">Please confirm</h2>
        <p id="confirm-text"></p>
        <div class="actions">
          <button type="submit" value="cancel" autofocus>Cancel</button>
          <button type="submit" value="ok" class="danger" data-confirm-ok>Confirm</button>
        </div>
      </form>
    </dialog>
  );
}

function dataTexts(texts: ScriptTexts): Record<string, string> {
  return Object.fromEntries(Object.entries(texts).map(([k, v]) => [`data-text-${k}`, v]));
}

export function CsrfInput(props: { token: string }) {
  return <input type="hidden" name="_csrf" value={props.token} />;
}

export type NoticeKind = "ok" | "error" | "info";
export interface NoticeData {
  kind: NoticeKind;
  text: string;
}

export function Notice(props: { notice?: NoticeData; id?: string }) {
  if (!props.notice) return null;
  const { kind, text } = props.notice;
  return (
    <div
      id={props.id}
      class={`notice ${kind}`}
      role={kind === "error" ? "alert" : "status"}
      data-focus
    >
      {text}
    </div>
  );
}

export interface FieldProps {
  name: string;
  label: string;
  /** Unique per page; defaults to `f-<name>`. */
  id?: string;
  type?: string;
  value?: string;
  error?: string;
  hint?: string;
  required?: boolean;
  autocomplete?: string;
  minLength?: number;
  maxLength?: number;
  inputMode?: "text" | "email" | "numeric" | "decimal" | "search" | "url" | "tel" | "none";
  spellcheck?: boolean;
  autocapitalize?: "off" | "none" | "on" | "sentences" | "words" | "characters";
}

function describedBy(id: string, hint?: string, error?: string): string | undefined {
  const ids = [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean);
  return ids.length ? ids.join(" ") : undefined;
}

/** A labelled input with its hint and its inline error right below it. */
export function Field(props: FieldProps) {
  const id = props.id ?? `f-${props.name}`;
  return (
    <div class={props.error ? "field invalid" : "field"}>
      <label for={id}>{props.label}</label>
      {props.hint && <p class="hint" id={`${id}-hint`}>{props.hint}</p>}
      <input
        id={id}
        name={props.name}
        type={props.type ?? "text"}
        value={props.value}
        required={props.required}
        autocomplete={props.autocomplete}
        minlength={props.minLength}
        maxlength={props.maxLength}
        inputmode={props.inputMode}
        spellcheck={props.spellcheck}
        autocapitalize={props.autocapitalize}
        aria-invalid={props.error ? "true" : undefined}
        aria-describedby={describedBy(id, props.hint, props.error)}
      />
      <FieldError id={id} error={props.error} />
    </div>
  );
}

export function FieldError(props: { id: string; error?: string }) {
  if (!props.error) return null;
  return <p class="field-error" id={`${props.id}-error`}>{props.error}</p>;
}

export interface SelectProps {
  name: string;
  label: string;
  id?: string;
  value?: string;
  error?: string;
  hint?: string;
  options: { value: string; label: string }[];
}

export function Select(props: SelectProps) {
  const id = props.id ?? `f-${props.name}`;
  return (
    <div class={props.error ? "field invalid" : "field"}>
      <label for={id}>{props.label}</label>
      {props.hint && <p class="hint" id={`${id}-hint`}>{props.hint}</p>}
      <select
        id={id}
        name={props.name}
        aria-invalid={props.error ? "true" : undefined}
        aria-describedby={describedBy(id, props.hint, props.error)}
      >
        {props.options.map((o) => (
          <option value={o.value} selected={o.value === props.value}>{o.label}</option>
        ))}
      </select>
      <FieldError id={id} error={props.error} />
    </div>
  );
}

/** A submit button that shows a spinner while its form's request runs. */
export function Submit(props: { children?: Child; class?: string; busy?: string }) {
  return (
    <button type="submit" class={props.class}>
      {props.children}
      <Spinner label={props.busy ?? "Working…"} />
    </button>
  );
}

/** Visible only while the enclosing element's htmx request runs. */
export function Spinner(props: { label?: string }) {
  return (
    <span class="htmx-indicator spinner-wrap">
      <span class="spinner" aria-hidden="true"></span>
      <span class="visually-hidden">{props.label ?? "Loading…"}</span>
    </span>
  );
}

export function EmptyState(props: { title: string; children?: Child }) {
  return (
    <div class="empty">
      <p class="empty-title">{props.title}</p>
      {props.children}
    </div>
  );
}

/** A read-only value with a copy button (keys, addresses, secrets). */
export function CopyField(
  props: { id: string; label: string; value: string; hideLabel?: boolean },
) {
  return (
    <div class="copy-field">
      <label for={props.id} class={props.hideLabel ? "visually-hidden" : undefined}>
        {props.label}
      </label>
      <div class="copy-row">
        <input
          id={props.id}
          type="text"
          readonly
          value={props.value}
          spellcheck={false}
          autocomplete="off"
          class="mono"
        />
        <button type="button" data-copy={props.id}>
          Copy<span class="visually-hidden">{` ${props.label.toLowerCase()}`}</span>
        </button>
      </div>
    </div>
  );
}

/** "2026-11-30 18:38 UTC": a time as the dashboard shows it (to the minute, in UTC). */
export function utcMinute(t: Date | string): string {
  const d = typeof t === "string" ? new Date(t) : t;
  return `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

/** A timestamp shown in UTC to the minute, with the exact value in `datetime`. */
export function Time(props: { iso: string | null | undefined; empty?: string }) {
  if (!props.iso) return <span class="muted">{props.empty ?? "—"}</span>;
  return <time datetime={props.iso}>{utcMinute(props.iso)}</time>;
}

export function Badge(props: { tone: "ok" | "warn" | "bad" | "neutral"; children?: Child }) {
  return <span class={`badge ${props.tone}`}>{props.children}</span>;
}

/** The page's error (403 CSRF, 404, 429, 500) as a section body. */
export function ErrorView(props: { title: string; message: string; back?: string }) {
  return (
    <section class="error-view">
      <h1>{props.title}</h1>
      <div class="notice error" role="alert" data-focus>{props.message}</div>
      <p>
        <a href={props.back ?? "/dashboard"}>Back to the dashboard</a>
      </p>
    </section>
  );
}
