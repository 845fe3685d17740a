/** Entry: log in, sign up, verify the emailed code, and the merchant key shown once. */
import { CopyField, CsrfInput, Field, Notice, type NoticeData, Select, Submit } from "./shell.tsx";

export interface FormState {
  values?: Record<string, string>;
  errors?: Record<string, string | undefined>;
  notice?: NoticeData;
}

interface FormProps extends FormState {
  csrf: string;
}

/** Every entry form posts to itself and swaps the answer into #main. */
function entryForm(action: string) {
  return {
    method: "post" as const,
    action,
    "hx-post": action,
    "hx-target": "#main",
    "hx-disabled-elt": "find button[type=submit]",
  };
}

export function LoginView(props: FormProps & { next?: string }) {
  const v = props.values ?? {};
  const e = props.errors ?? {};
  return (
    <section aria-labelledby="login-title">
      <h1 id="login-title">Log in</h1>
      <Notice notice={props.notice} />
      <form {...entryForm("/dashboard/login")} class="stack">
        <CsrfInput token={props.csrf} />
        {props.next && <input type="hidden" name="next" value={props.next} />}
        <EmailField value={v.email} error={e.email} />
        <Field
          name="password"
          label="Password"
          type="password"
          error={e.password}
          required
          autocomplete="current-password"
        />
        <Submit busy="Logging in…">Log in</Submit>
      </form>
      <p class="alt">
        New here? <a href="/dashboard/signup">Create an account</a>
        {" · "}
        <a
          href={v.email
            ? `/dashboard/verify?email=${encodeURIComponent(v.email)}`
            : "/dashboard/verify"}
        >
          Enter a verification code
        </a>
      </p>
    </section>
  );
}

export const WALLET_PROVIDER_OPTIONS = [
  { value: "MANAGED", label: "Managed by this service (recommended)" },
  { value: "EXTENSION_WALLET", label: "My browser extension wallet" },
  { value: "LINK_WALLET", label: "A wallet I link later" },
  { value: "HOSTED_WALLET", label: "A hosted wallet" },
];

export function SignupView(props: FormProps) {
  const v = props.values ?? {};
  const e = props.errors ?? {};
  return (
    <section aria-labelledby="signup-title">
      <h1 id="signup-title">Create your merchant account</h1>
      <Notice notice={props.notice} />
      <form {...entryForm("/dashboard/signup")} class="stack">
        <CsrfInput token={props.csrf} />
        <Field
          name="email"
          label="Email"
          type="email"
          value={v.email}
          error={e.email}
          required
          autocomplete="email"
          maxLength={254}
          spellcheck={false}
          autocapitalize="off"
        />
        <Field
          name="businessName"
          label="Business name"
          value={v.businessName}
          error={e.businessName}
          required
          autocomplete="organization"
          maxLength={120}
        />
        <Field
          name="password"
          label="Password"
          type="password"
          hint="8 to 200 characters."
          error={e.password}
          required
          autocomplete="new-password"
          minLength={8}
          maxLength={200}
        />
        <Select
          name="walletProvider"
          label="Payout wallet"
          hint="Where your payments settle. You can change it later on the Wallet page."
          value={v.walletProvider ?? "MANAGED"}
          error={e.walletProvider}
          options={WALLET_PROVIDER_OPTIONS}
        />
        <Submit busy="Creating your account…">Create account</Submit>
      </form>
      <p class="alt">
        Already have an account? <a href="/dashboard/login">Log in</a>
      </p>
    </section>
  );
}

export function VerifyView(props: FormProps) {
  const v = props.values ?? {};
  const e = props.errors ?? {};
  return (
    <section aria-labelledby="verify-title">
      <h1 id="verify-title">Verify your email</h1>
      <Notice notice={props.notice} />
      <p>We emailed you a 6-character code. Enter it with your password to finish.</p>
      <form {...entryForm("/dashboard/verify")} class="stack">
        <CsrfInput token={props.csrf} />
        <EmailField value={v.email} error={e.email} />
        <Field
          name="code"
          label="Verification code"
          value={v.code}
          error={e.code}
          required
          autocomplete="one-time-code"
          maxLength={32}
          spellcheck={false}
          autocapitalize="characters"
        />
        <Field
          name="password"
          label="Password"
          type="password"
          hint="Signs you in right after verification."
          error={e.password}
          required
          autocomplete="current-password"
        />
        <Submit busy="Verifying…">Verify</Submit>
      </form>
      <p class="alt">
        No code, or it expired? <a href="/dashboard/signup">Sign up again</a> to get a new one.
      </p>
    </section>
  );
}

/** After verification: the merchant key, once, and the way on. */
export function VerifiedView(
  props: { message: string; apiKey: string; warning: string; loggedIn: boolean; login?: string },
) {
  return (
    <section aria-labelledby="verified-title">
      <h1 id="verified-title">Your account is verified</h1>
      <Notice notice={{ kind: "ok", text: props.message }} />
      <KeyOnce
        id="merchant-key"
        label="Your merchant key"
        value={props.apiKey}
        warning={props.warning}
      />
      {props.loggedIn
        ? (
          <p>
            <a class="button primary" href="/dashboard">Continue to your dashboard</a>
          </p>
        )
        : (
          <>
            {props.login && <Notice notice={{ kind: "info", text: props.login }} />}
            <p>
              <a class="button primary" href="/dashboard/login">Log in</a>
            </p>
          </>
        )}
    </section>
  );
}

/** A key shown once: the value with a copy button and the warning to save it now. */
export function KeyOnce(props: { id: string; label: string; value: string; warning: string }) {
  return (
    <div class="key-once" role="region" aria-labelledby={`${props.id}-heading`} data-focus>
      <h2 id={`${props.id}-heading`}>{props.label}</h2>
      <p class="warning">
        <strong>{props.warning}</strong>
      </p>
      <CopyField id={props.id} label={props.label} value={props.value} hideLabel />
    </div>
  );
}

/** The email field of the entry forms (login, signup, verify). */
function EmailField(props: { value?: string; error?: string }) {
  return (
    <Field
      name="email"
      label="Email"
      type="email"
      value={props.value}
      error={props.error}
      required
      autocomplete="username"
      spellcheck={false}
      autocapitalize="off"
    />
  );
}
