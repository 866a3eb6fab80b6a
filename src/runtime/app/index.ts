// Public exports of the HTTP application.
export {}
