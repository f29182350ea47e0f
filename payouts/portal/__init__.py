"""The partner portal's pages of payouts: the portal's home (it combines orders and payouts), the payouts
list, Settings · Payment Methods and the monthly statement. The plumbing every portal page shares (sign-in,
partner scoping, security headers, CSV streaming) is ``partners.portal``'s."""
