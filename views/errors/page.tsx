/**
 * The 404 and error page for every non-API path (the API keeps the spec's JSON errors): a title,
 * `lang` (from the layout), a main landmark and a way back.
 */
import { Layout } from "../layout.tsx";

export function ErrorPage(props: { title: string; message: string; css: string }) {
  return (
    <Layout
      title={`${props.title} · Settlement`}
      head={<link rel="stylesheet" href={props.css} />}
    >
      <div class="app entry">
        <header class="top">
          <a class="brand" href="/">Settlement</a>
        </header>
        <main id="main" class="narrow">
          <section class="error-view">
            <h1>{props.title}</h1>
            <p class="notice error">{props.message}</p>
            <p>
              <a href="/dashboard">Back to the dashboard</a>
            </p>
          </section>
        </main>
      </div>
    </Layout>
  );
}

/** The page as a document (for `c.html`). */
export function errorPageHtml(title: string, message: string, css: string): string {
  return "<!DOCTYPE html>" + String(<ErrorPage title={title} message={message} css={css} />);
}
