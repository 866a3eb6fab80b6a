/** The name svc is published and imported under (`import … from 'svcjs'`); its command stays `svc`. Edge-safe. */
export const PACKAGE_NAME = 'svcjs'
