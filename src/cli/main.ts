#!/usr/bin/env node
console.log('svc')
