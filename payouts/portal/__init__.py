"""The partner portal's pages of payouts: the payouts list, Settings · Payment Methods and the monthly
statement (the portal's home, which combines orders and payouts, is ``payouts.backoffice.portal_home``). The
plumbing every portal page shares (sign-in, partner scoping, security headers, CSV streaming) is
``partners.portal``'s."""
