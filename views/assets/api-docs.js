// /api/docs: starts Swagger UI on the document named by the page (a file, so the page's
// Content-Security-Policy needs no inline script).
(function () {
  const el = document.getElementById("swagger-ui");
  // deno-lint-ignore no-undef
  SwaggerUIBundle({
    url: el.getAttribute("data-url"),
    domNode: el,
    deepLinking: true,
    validatorUrl: null,
    tryItOutEnabled: false,
  });
})();
